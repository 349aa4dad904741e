/* signature.c - normalise error texts and hash failure signatures. */
#include "signature.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "redact.h"

static bool
token_char(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '_';
}

/* An id-like token: 8+ hex digits and dashes with at least one digit, so
 * that a word made of hex letters ("deadbeef", "accepted") stays a word. */
static bool
id_like(const unsigned char *s, size_t n)
{
	bool digit = false;
	size_t i;

	if (n < 8)
		return false;
	for (i = 0; i < n; i++) {
		if (isdigit(s[i]))
			digit = true;
		else if (!isxdigit(s[i]) && s[i] != '-')
			return false;
	}
	return digit;
}

/* A random-looking run of letters and digits (no '-' or '_'): a base62
 * or base32 id ("8HkQw2LxP9", a ULID) whose letters differ from one
 * message to the next, where turning digits into '#' is not enough.
 * 8+ characters, letters and digits switching often (3+ times, or 2+ in
 * mixed case); "sha256", "utf8mb4" or "ORDER2024" stay words. */
static bool
random_like(const unsigned char *s, size_t n)
{
	bool upper = false, lower = false;
	size_t i, switches = 0;

	if (n < 8)
		return false;
	for (i = 0; i < n; i++) {
		upper |= isupper(s[i]) != 0;
		lower |= islower(s[i]) != 0;
		if (i > 0 && (isdigit(s[i]) != 0) != (isdigit(s[i - 1]) != 0))
			switches++;
	}
	return switches >= 3 || (switches >= 2 && upper && lower);
}

/* Appends [s, s + n) with its digit runs as '#'. */
static void
add_digits(const unsigned char *s, size_t n, struct dlq_buf *out)
{
	size_t i = 0;

	while (i < n) {
		if (isdigit(s[i])) {
			while (i < n && isdigit(s[i]))
				i++;
			dlq_buf_addc(out, '#');
		} else
			dlq_buf_addc(out, (char)s[i++]);
	}
}

void
dlq_signature_normalize(const char *sv, size_t n, struct dlq_buf *out)
{
	const unsigned char *s = (const unsigned char *)sv;
	size_t start = out->len, i = 0, j, k;
	bool space = false;

	while (i < n && out->len - start < DLQ_SIGNATURE_TEXT_MAX) {
		if (isspace(s[i])) {
			space = true;
			i++;
			continue;
		}
		if (space && out->len > start)
			dlq_buf_addc(out, ' ');
		space = false;
		if (!token_char(s[i])) {
			dlq_buf_addc(out, (char)s[i++]);
			continue;
		}
		/* an address, kept in the text when log.mask_emails is
		 * off: one group for every customer's, not one each */
		j = dlq_email_len(s + i, n - i);
		if (j > 0) {
			dlq_buf_adds(out, "<email>");
			i += j;
			continue;
		}
		for (j = i; j < n && token_char(s[j]); j++)
			;
		if (id_like(s + i, j - i)) {
			dlq_buf_adds(out, "<id>");
			i = j;
			continue;
		}
		/* segments between '-' and '_': from the first random one
		 * on, the token is an id ("req_8HkQw2LxP9" is "req_<id>";
		 * a nanoid may hold '-' and '_' itself) */
		while (i < j) {
			for (k = i; k < j && isalnum(s[k]); k++)
				;
			if (random_like(s + i, k - i)) {
				dlq_buf_adds(out, "<id>");
				i = j;
				break;
			}
			add_digits(s + i, k - i, out);
			i = k;
			if (i < j)
				dlq_buf_addc(out, (char)s[i++]);
		}
	}
	if (out->len - start > DLQ_SIGNATURE_TEXT_MAX) {
		out->len = start + dlq_utf8_prefix(out->data + start,
		    DLQ_SIGNATURE_TEXT_MAX);
		out->data[out->len] = '\0';
	}
}

static uint64_t
fnv(uint64_t h, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	for (; *p != '\0'; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	h ^= 0xff;	/* separator: ("ab","c") != ("a","bc") */
	h *= 0x100000001b3ULL;
	return h;
}

uint64_t
dlq_signature_hash(const char *queue, const char *reason, const char *class,
    const char *normalized)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv(h, queue);
	h = fnv(h, reason);
	h = fnv(h, class);
	return fnv(h, normalized);
}

uint64_t
dlq_signature_cause(const char *reason, const char *class,
    const char *normalized)
{
	return dlq_signature_hash("", reason, class, normalized);
}

void
dlq_signature_id(uint64_t h, char out[DLQ_SIGNATURE_ID_LEN + 1])
{
	snprintf(out, DLQ_SIGNATURE_ID_LEN + 1, "%012llx",
	    (unsigned long long)(h >> 16));
}

bool
dlq_signature_id_valid(const char *s)
{
	return strlen(s) == DLQ_SIGNATURE_ID_LEN &&
	    strspn(s, "0123456789abcdef") == DLQ_SIGNATURE_ID_LEN;
}
