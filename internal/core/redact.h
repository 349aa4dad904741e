/* redact.h - keep personal data and secrets out of logs and digests.
 *
 * Payloads and error texts of dead letters often hold phone numbers, email
 * addresses and tokens. Everything the worker prints passes through here:
 * - JSON payloads: the value of every key that contains one of the mask
 *   keys (case-insensitive substring: "user_email" matches "email") is
 *   replaced by "***", whatever its type, nested objects included; so
 *   is the "value" of a name/value pair whose name member holds a mask
 *   key ({"name": "password", "value": "***"}).
 * - Text (JSON string values, plain-text payloads, error texts): email
 *   addresses and runs of at least `digits_min` digits (a "+" may start a
 *   run that then allows spaces, dashes, dots and parentheses; without it
 *   the digits may stand in groups: 555-123-4567, (555) 123-4567, but
 *   not as a date or an IPv4 address) become "***";
 *   so do the value written after a mask key and "=" or ":" (token=abc,
 *   "password": "x", Authorization: Bearer abc; after "key: " a bare word
 *   only when it holds a digit or is 16 bytes or longer: prose stays) and
 *   the credential after "Bearer ", and the text and value attribute
 *   of an XML element named after a mask key (<password>***</password>)
 *   or by a name attribute (<field name="password">***</field>).
 * - Binary payloads are never printed.
 * The scan is streaming (a name/value pair reads ahead at most 1 KiB)
 * and stops at `max_bytes` of output, so a 10 MiB payload costs what
 * its first few KiB cost. Pure, no I/O, any thread. */
#ifndef DLQ_REDACT_H
#define DLQ_REDACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"

struct dlq_redact {
	const struct dlq_strlist *keys;	/* borrowed; lower-case expected */
	bool	 emails;
	int	 digits_min;		/* 0: digit runs are kept */
	size_t	 max_bytes;		/* output cap; 0: nothing printed */
	uint32_t key_starts;		/* dlq_redact_key_starts(keys), kept
					 * by a hot path; 0: worked out anew
					 * for each key looked at */
};

/* The first letters of the mask keys, a bit per letter (others share
 * bit 31): a key's characters that start none are passed over without
 * comparing each. */
uint32_t dlq_redact_key_starts(const struct dlq_strlist *keys);

enum dlq_payload_kind {
	DLQ_PAYLOAD_EMPTY,
	DLQ_PAYLOAD_JSON,
	DLQ_PAYLOAD_TEXT,
	DLQ_PAYLOAD_BINARY,
};

const char *dlq_payload_kind_name(enum dlq_payload_kind);

/* Appends the redacted, truncated payload (plain text, not yet escaped)
 * to `out`. `*truncated` tells whether anything was cut. */
enum dlq_payload_kind dlq_redact_payload(const struct dlq_redact *,
	    const void *p, size_t n, struct dlq_buf *out, bool *truncated);

/* Text past the output budget that is still scanned, so that a token
 * that starts inside the budget is seen whole (an email is at most 254
 * bytes). A caller that hands over less than all of a text keeps more
 * than this past `max`, or the redaction would not know it was cut. */
#define DLQ_REDACT_LOOKAHEAD	320

/* Appends redacted text, at most `max` bytes, cut on a UTF-8 boundary. */
void	dlq_redact_text(const struct dlq_redact *, const void *p, size_t n,
	    size_t max, struct dlq_buf *out);

/* Length of the email address that starts at p (local@domain.tld), or 0:
 * what the masking of emails masks. */
size_t	dlq_email_len(const void *p, size_t n);

#endif
