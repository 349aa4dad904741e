/* token.h - console tokens: made at random, kept only as their SHA-256.
 *
 * dlqctl console token makes one; the worker's token file holds its hash,
 * so that a copy of the file lets nobody in. */
#ifndef DLQ_TOKEN_H
#define DLQ_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#define DLQ_TOKEN_LEN	43	/* 32 random bytes, base64url, no padding */
#define DLQ_TOKEN_HASH_LEN	64	/* SHA-256, lowercase hex */

/* A new token (DLQ_TOKEN_LEN characters and a NUL) from the kernel's
 * random source; false when it gave none. */
bool	dlq_token_new(char out[DLQ_TOKEN_LEN + 1]);
/* The SHA-256 of s[0..n), lowercase hex and a NUL. */
void	dlq_token_hash(const void *s, size_t n,
	    char hex[DLQ_TOKEN_HASH_LEN + 1]);
/* Whether `s` is a hash as the token file writes it. */
bool	dlq_token_hash_valid(const char *s);
/* Equal strings of the same length, in time that does not depend on
 * where they differ. */
bool	dlq_token_equal(const char *a, const char *b, size_t n);
/* Whether `name` is a console user's name: 1 to DLQ_USER_NAME_MAX
 * letters, digits, '.', '_', '@' or '-'. */
#define DLQ_USER_NAME_MAX	64
bool	dlq_user_name_valid(const char *name);
/* `n` random bytes as lowercase hex (2n characters and a NUL) in `out`;
 * false when the kernel gave none. */
bool	dlq_random_hex(char *out, size_t n);

#endif
