/* signature.h - the failure signature that groups dead letters.
 *
 * Thousands of dead letters with one cause differ only in ids, numbers and
 * timestamps inside their error text. The signature is the source queue,
 * the death reason, the error class and the error text with those
 * normalised away, so that they read as one group in a digest and in
 * `dlqctl groups`. Pure; any thread. */
#ifndef DLQ_SIGNATURE_H
#define DLQ_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define DLQ_SIGNATURE_TEXT_MAX	160
#define DLQ_SIGNATURE_ID_LEN	12

/* The version of what dlq_signature_normalize() and dlq_signature_hash()
 * give for a text: one more whenever a release changes it (a new kind of
 * id normalised away), so that the records archived before are given
 * their signature again (sigrefresh.h). 1: digits, hex, uuid and random
 * ids, emails (2026-12). */
#define DLQ_SIGNATURE_VERSION	1

/* What a digest line, `dlqctl list`, `groups` and `show` say for a dead
 * letter that carried none of the configured error headers. */
#define DLQ_NO_ERROR_TEXT	"(no error header)"

/* Appends the normalised error text: digit runs become "#", hex / uuid
 * tokens of 8+ characters with a digit and random-looking runs of letters
 * and digits (base62 / base32 ids) become "<id>", email addresses (left
 * in the text when log.mask_emails is off) "<email>", whitespace runs one
 * space; at most DLQ_SIGNATURE_TEXT_MAX bytes. */
void	 dlq_signature_normalize(const char *s, size_t n, struct dlq_buf *out);

/* 64-bit FNV-1a over the four parts. */
uint64_t dlq_signature_hash(const char *queue, const char *reason,
	    const char *class, const char *normalized);

/* The cause: the signature without the queue, the same in every queue,
 * by which a digest gathers one failure in several queues into one line
 * and `dlqctl groups --by-cause` its groups. */
uint64_t dlq_signature_cause(const char *reason, const char *class,
	    const char *normalized);

/* The printable id: the hash's first 12 hex digits, NUL-terminated. */
void	 dlq_signature_id(uint64_t, char out[DLQ_SIGNATURE_ID_LEN + 1]);

/* Whether `s` has the shape of such an id (12 lowercase hex digits): a
 * selection by anything else would match nothing, by mistake. */
bool	 dlq_signature_id_valid(const char *s);
/* Says so, given the text (printf format, one %.40s). */
#define DLQ_SIGNATURE_BAD	"not a signature: '%.40s' (12 hex digits, as " \
	"dlqctl groups shows them)"

#endif
