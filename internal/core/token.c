/* token.c - console tokens (token.h). */
#include "token.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

static bool
random_bytes(unsigned char *p, size_t n)
{
	ssize_t got;

	while (n > 0) {
		if ((got = getrandom(p, n, 0)) <= 0)
			return false;
		p += got;
		n -= (size_t)got;
	}
	return true;
}

bool
dlq_token_new(char out[DLQ_TOKEN_LEN + 1])
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char raw[33];
	size_t i, o = 0;
	uint32_t v;

	if (!random_bytes(raw, 32))
		return false;
	raw[32] = 0;
	/* 3 bytes -> 4 characters; the last group has 2 bytes -> 3 */
	for (i = 0; i < 33; i += 3) {
		v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 |
		    (i + 2 < 33 ? raw[i + 2] : 0);
		out[o++] = abc[v >> 18 & 63];
		out[o++] = abc[v >> 12 & 63];
		out[o++] = abc[v >> 6 & 63];
		if (o < DLQ_TOKEN_LEN)
			out[o++] = abc[v & 63];
	}
	out[DLQ_TOKEN_LEN] = '\0';
	memset(raw, 0, sizeof(raw));
	return true;
}

void
dlq_token_hash(const void *s, size_t n, char hex[DLQ_TOKEN_HASH_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0, i;

	if (!EVP_Digest(s, n, md, &len, EVP_sha256(), NULL) || len != 32) {
		/* never matches a hash of the file (those are hex) */
		memset(hex, '?', DLQ_TOKEN_HASH_LEN);
		hex[DLQ_TOKEN_HASH_LEN] = '\0';
		return;
	}
	for (i = 0; i < len; i++) {
		hex[2 * i] = "0123456789abcdef"[md[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
	}
	hex[DLQ_TOKEN_HASH_LEN] = '\0';
}

bool
dlq_token_hash_valid(const char *s)
{
	size_t i;

	for (i = 0; i < DLQ_TOKEN_HASH_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return false;
	return s[DLQ_TOKEN_HASH_LEN] == '\0';
}

bool
dlq_token_equal(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

bool
dlq_user_name_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= DLQ_USER_NAME_MAX && strspn(s,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	    "._@-") == n;
}

bool
dlq_random_hex(char *out, size_t n)
{
	unsigned char b[64];
	size_t i;

	if (n > sizeof(b) || !random_bytes(b, n))
		return false;
	for (i = 0; i < n; i++) {
		out[2 * i] = "0123456789abcdef"[b[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[b[i] & 15];
	}
	out[2 * n] = '\0';
	return true;
}
