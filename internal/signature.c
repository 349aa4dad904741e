/* signature.c - normalise error texts and hash failure signatures. */
#include "signature.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

void
dlq_signature_normalize(const char *sv, size_t n, struct dlq_buf *out)
{
	const unsigned char *s = (const unsigned char *)sv;
	size_t start = out->len, i = 0, j;
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
		for (j = i; j < n && token_char(s[j]); j++)
			;
		if (id_like(s + i, j - i)) {
			dlq_buf_adds(out, "<id>");
			i = j;
			continue;
		}
		while (i < j) {
			if (isdigit(s[i])) {
				while (i < j && isdigit(s[i]))
					i++;
				dlq_buf_addc(out, '#');
			} else
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
