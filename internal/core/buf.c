/* buf.c - growable byte buffer and JSON text building.
 *
 * JSON escaping lives here and nowhere else, so every line the project
 * prints (logs, digests, control replies) is valid JSON by construction. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void
dlq_buf_init(struct dlq_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
dlq_buf_release(struct dlq_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void
dlq_buf_reset(struct dlq_buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data != NULL)
		b->data[0] = '\0';
}

bool
dlq_buf_reserve(struct dlq_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto oom;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if ((p = realloc(b->data, cap)) == NULL)
		goto oom;
	b->data = p;
	b->cap = cap;
	return true;
oom:
	b->oom = true;
	return false;
}

void
dlq_buf_add(struct dlq_buf *b, const void *p, size_t n)
{
	if (n == 0 || !dlq_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
dlq_buf_adds(struct dlq_buf *b, const char *s)
{
	dlq_buf_add(b, s, strlen(s));
}

void
dlq_buf_printf(struct dlq_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !dlq_buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void
dlq_buf_add_u64(struct dlq_buf *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	dlq_buf_add(b, tmp + i, sizeof(tmp) - i);
}

void
dlq_buf_add_i64(struct dlq_buf *b, int64_t v)
{
	if (v < 0) {
		dlq_buf_addc(b, '-');
		dlq_buf_add_u64(b, (uint64_t)0 - (uint64_t)v);
	} else
		dlq_buf_add_u64(b, (uint64_t)v);
}

/* Word-at-a-time scanning: logs and archive records copy every payload
 * and header byte through these loops, 8 bytes per step where the text
 * is plain ASCII. The tests below are exact for "does any byte ...". */
#define ONES	0x0101010101010101ULL
#define HIGHS	0x8080808080808080ULL

static uint64_t
load8(const unsigned char *s)
{
	uint64_t x;

	memcpy(&x, s, sizeof(x));
	return x;
}

/* Any byte of x below c (c <= 0x80)? */
static bool
any_below(uint64_t x, unsigned c)
{
	return ((x - ONES * c) & ~x & HIGHS) != 0;
}

/* Any byte of x equal to c? */
static bool
any_equal(uint64_t x, unsigned c)
{
	return any_below(x ^ (ONES * c), 1);
}

/* Length of the prefix of s made of bytes 0x20..0x7f other than a and
 * b: what JSON copies as is (a, b = '"', '\\'), or printable ASCII
 * (a = b = 0x7f). */
static size_t
text_run(const unsigned char *s, size_t n, unsigned char a, unsigned char b)
{
	size_t i = 0;
	uint64_t x;
#ifdef __SSE2__
	/* 16 bytes a step: as signed bytes, 0x80..0xff are negative, so one
	 * comparison finds both the control bytes and the non-ASCII ones */
	const __m128i space = _mm_set1_epi8(0x20);
	const __m128i va = _mm_set1_epi8((char)a), vb = _mm_set1_epi8((char)b);
	__m128i v;
	unsigned stop;

	for (; i + 16 <= n; i += 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		stop = (unsigned)_mm_movemask_epi8(_mm_or_si128(
		    _mm_cmplt_epi8(v, space), _mm_or_si128(
		    _mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb))));
		if (stop != 0)
			return i + (size_t)__builtin_ctz(stop);
	}
#endif
	for (; i + 8 <= n; i += 8) {
		x = load8(s + i);
		if ((x & HIGHS) != 0 || any_below(x, 0x20) ||
		    any_equal(x, a) || any_equal(x, b))
			break;
	}
	while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != a && s[i] != b)
		i++;
	return i;
}

/* Length of the prefix of s that is ASCII (any byte below 0x80), and
 * holds no NUL when `nul` is set. */
static size_t
ascii_run(const unsigned char *s, size_t n, bool nul)
{
	size_t i = 0;
	uint64_t x;

	for (; i + 8 <= n; i += 8) {
		x = load8(s + i);
		if ((x & HIGHS) != 0 || (nul && any_below(x, 1)))
			break;
	}
	while (i < n && s[i] < 0x80 && (s[i] != 0 || !nul))
		i++;
	return i;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

void
dlq_buf_json_str(struct dlq_buf *b, const void *sv, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = sv;
	size_t i = 0, run, k;

	/* Worst case 6 bytes per input byte; reserve once for short strings. */
	if (!dlq_buf_reserve(b, n + 2))
		return;
	dlq_buf_addc(b, '"');
	while (i < n) {
		/* Copy the longest run that needs no escaping in one go. */
		run = i + text_run(s + i, n - i, '"', '\\');
		if (run > i) {
			dlq_buf_add(b, s + i, run - i);
			i = run;
			continue;
		}
		switch (s[i]) {
		case '"':  dlq_buf_add(b, "\\\"", 2); i++; continue;
		case '\\': dlq_buf_add(b, "\\\\", 2); i++; continue;
		case '\n': dlq_buf_add(b, "\\n", 2); i++; continue;
		case '\r': dlq_buf_add(b, "\\r", 2); i++; continue;
		case '\t': dlq_buf_add(b, "\\t", 2); i++; continue;
		default:
			break;
		}
		if (s[i] < 0x20) {
			char esc[6] = { '\\', 'u', '0', '0',
			    hex[s[i] >> 4], hex[s[i] & 0xf] };
			dlq_buf_add(b, esc, sizeof(esc));
			i++;
			continue;
		}
		if ((k = utf8_seq(s + i, n - i)) == 0) {
			dlq_buf_add(b, "\xef\xbf\xbd", 3);	/* U+FFFD */
			i++;
			continue;
		}
		if (k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0) {
			/* a C1 control (U+0080..U+009F; U+009B is a CSI):
			 * escaped like C0, for whoever tails a log */
			char esc[6] = { '\\', 'u', '0', '0',
			    hex[s[i + 1] >> 4], hex[s[i + 1] & 0xf] };
			dlq_buf_add(b, esc, sizeof(esc));
			i += 2;
			continue;
		}
		dlq_buf_add(b, s + i, k);
		i += k;
	}
	dlq_buf_addc(b, '"');
}

void
dlq_buf_json_cstr(struct dlq_buf *b, const char *s)
{
	if (s == NULL)
		dlq_buf_adds(b, "null");
	else
		dlq_buf_json_str(b, s, strlen(s));
}

/* Keys are the program's own words, a dozen on every dead_letter line:
 * plain ones (letters, digits, '_') are copied in one step; any other is
 * escaped, so that a line stays JSON whatever key it is given. */
void
dlq_buf_json_key(struct dlq_buf *b, const char *key)
{
	size_t i, n = strlen(key);
	char *p;

	for (i = 0; i < n; i++)
		if (!((key[i] >= 'a' && key[i] <= 'z') || key[i] == '_' ||
		    (key[i] >= '0' && key[i] <= '9') ||
		    (key[i] >= 'A' && key[i] <= 'Z')))
			break;
	if (i < n) {
		dlq_buf_addc(b, ',');
		dlq_buf_json_str(b, key, n);
		dlq_buf_addc(b, ':');
		return;
	}
	if (!dlq_buf_reserve(b, n + 4))
		return;
	p = b->data + b->len;
	p[0] = ',';
	p[1] = '"';
	memcpy(p + 2, key, n);
	p[n + 2] = '"';
	p[n + 3] = ':';
	b->len += n + 4;
	b->data[b->len] = '\0';
}

static void
put2(char *p, int v)
{
	p[0] = (char)('0' + v / 10 % 10);
	p[1] = (char)('0' + v % 10);
}

/* "YYYY-MM-DDTHH:MM:SS" of `secs`, 19 bytes. A flood stamps many lines
 * and x-death times with the same second: each thread keeps the last. */
static bool
format_second(int64_t secs, char out[19])
{
	static _Thread_local bool have;
	static _Thread_local int64_t last_secs;
	static _Thread_local char last[19];
	struct tm tm;
	time_t t = (time_t)secs;

	if (!have || secs != last_secs) {
		if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 0 ||
		    tm.tm_year + 1900 > 9999)
			return false;
		put2(last, (tm.tm_year + 1900) / 100);
		put2(last + 2, (tm.tm_year + 1900) % 100);
		last[4] = '-';
		put2(last + 5, tm.tm_mon + 1);
		last[7] = '-';
		put2(last + 8, tm.tm_mday);
		last[10] = 'T';
		put2(last + 11, tm.tm_hour);
		last[13] = ':';
		put2(last + 14, tm.tm_min);
		last[16] = ':';
		put2(last + 17, tm.tm_sec);
		last_secs = secs;
		have = true;
	}
	memcpy(out, last, sizeof(last));
	return true;
}

static void
rfc3339(struct dlq_buf *b, int64_t secs, int ms)
{
	char tmp[24];
	size_t n = 19;

	if (!format_second(secs, tmp)) {
		dlq_buf_adds(b, "1970-01-01T00:00:00Z");
		return;
	}
	if (ms >= 0) {
		tmp[n++] = '.';
		tmp[n++] = (char)('0' + ms / 100);
		put2(tmp + n, ms % 100);
		n += 2;
	}
	tmp[n++] = 'Z';
	dlq_buf_add(b, tmp, n);
}

void
dlq_buf_rfc3339(struct dlq_buf *b, int64_t secs)
{
	rfc3339(b, secs, -1);
}

void
dlq_buf_rfc3339_ms(struct dlq_buf *b, int64_t ms)
{
	int64_t s = ms / 1000, r = ms % 1000;

	if (r < 0)
		r += 1000, s--;
	rfc3339(b, s, (int)r);
}

size_t
dlq_utf8_prefix(const void *sv, size_t n)
{
	const unsigned char *s = sv;
	size_t i = 0, k;

	while (i < n) {
		if (s[i] < 0x80) {
			i += ascii_run(s + i, n - i, false);
			continue;
		}
		if ((k = utf8_seq(s + i, n - i)) == 0) {
			/* A sequence cut by `n` ends the prefix; a bad byte is
			 * kept (the JSON writer replaces it). */
			if (s[i] >= 0xc2 && s[i] <= 0xf4 && n - i < 4)
				return i;
			k = 1;
		}
		i += k;
	}
	return n;
}

/* Length of the prefix of s[0..n) that is valid UTF-8, and without a
 * NUL byte when `nul` is set. */
static size_t
valid_len(const unsigned char *s, size_t n, bool nul)
{
	size_t i = 0, k;

	while (i < n) {
		if (s[i] < 0x80) {
			if ((k = ascii_run(s + i, n - i, nul)) == 0)
				return i;	/* a NUL */
			i += k;
			continue;
		}
		if ((k = utf8_seq(s + i, n - i)) == 0)
			return i;
		i += k;
	}
	return n;
}

/* Appends s[0..n) with each byte valid_len() stops at as U+FFFD. */
static void
add_valid(struct dlq_buf *b, const unsigned char *s, size_t n, bool nul)
{
	size_t i = 0, k;

	if (n == 0)
		return;		/* s may be NULL */
	while ((k = valid_len(s + i, n - i, nul)) < n - i) {
		dlq_buf_add(b, s + i, k);
		dlq_buf_add(b, "\xef\xbf\xbd", 3);	/* U+FFFD */
		i += k + 1;
	}
	dlq_buf_add(b, s + i, n - i);
}

void
dlq_buf_add_text(struct dlq_buf *b, const void *s, size_t n)
{
	add_valid(b, s, n, true);
}

size_t
dlq_text_len(const void *s, size_t n)
{
	return valid_len(s, n, true);
}

void
dlq_text_copy(char *out, size_t n, const void *s, size_t len)
{
	struct dlq_buf b;
	const char *p = s != NULL ? s : "";

	if (len > n)
		len = n;	/* what can fit, and a byte to tell a cut */
	dlq_buf_init(&b);
	if (dlq_text_len(p, len) < len) {
		dlq_buf_add_text(&b, p, len);
		p = b.data ? b.data : "";
		len = b.len;
	}
	if (len > n - 1)
		len = dlq_utf8_prefix(p, n - 1);
	memcpy(out, p, len);
	out[len] = '\0';
	dlq_buf_release(&b);
}

void
dlq_buf_add_json_text(struct dlq_buf *b, const void *sv, size_t n)
{
	const unsigned char *s = sv, *e;
	size_t i = 0, k;

	while (i < n) {
		/* up to the next escape: outside strings JSON has none, and
		 * inside one each backslash starts an escape */
		e = memchr(s + i, '\\', n - i);
		k = e != NULL ? (size_t)(e - s) : n;
		add_valid(b, s + i, k - i, false);
		if ((i = k) == n)
			break;
		if (n - i >= 6 && memcmp(s + i, "\\u0000", 6) == 0) {
			dlq_buf_add(b, "\\ufffd", 6);
			i += 6;
		} else {	/* the backslash and an ASCII byte after it */
			k = n - i >= 2 && s[i + 1] < 0x80 ? 2 : 1;
			dlq_buf_add(b, s + i, k);
			i += k;
		}
	}
}

size_t
dlq_json_plain_len(const void *s, size_t n)
{
	return text_run(s, n, '"', '\\');
}

bool
dlq_utf8_is_text(const void *sv, size_t n)
{
	const unsigned char *s = sv;
	size_t i = 0, k;

	while (i < n) {
		if (s[i] >= 0x20 && s[i] < 0x7f) {	/* printable ASCII */
			i += text_run(s + i, n - i, 0x7f, 0x7f);
			continue;
		}
		if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			return false;
		if (s[i] == 0x7f)
			return false;
		if ((k = utf8_seq(s + i, n - i)) == 0)
			return false;
		i += k;
	}
	return true;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void
dlq_buf_base64(struct dlq_buf *b, const void *sv, size_t n)
{
	const unsigned char *s = sv;
	char q[4];
	uint32_t v;
	size_t i;

	for (i = 0; i < n; i += 3) {
		v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		q[3] = i + 2 < n ? b64[v & 63] : '=';
		dlq_buf_add(b, q, 4);
	}
}

/* The value of a digit of b64[], or -1 (a replay decodes every body's
 * characters: arithmetic, not a search of the alphabet) */
static int
b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int
dlq_base64_decode(const char *t, struct dlq_buf *out)
{
	uint32_t v = 0;
	int bits = 0, pad = 0, d;

	/* room for all of it at once (out of memory: `oom` says so, as
	 * for any append) */
	dlq_buf_reserve(out, strlen(t) / 4 * 3 + 3);
	for (; *t != '\0'; t++) {
		if (*t == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || (d = b64_value(*t)) < 0)
			return -1;
		v = (v << 6) | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dlq_buf_addc(out, (char)(v >> bits & 0xff));
		}
	}
	return pad > 2 ? -1 : 0;
}
