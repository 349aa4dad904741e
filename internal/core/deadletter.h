/* deadletter.h - decode one delivery from a DLQ into a dead letter.
 *
 * Pure: no I/O, no allocation, no global state; safe on any input, since
 * a DLQ holds by definition what others could not handle. Everything it
 * cannot read is noted in `problems`, never fatal: a dead letter with bad
 * headers is still a dead letter. All pointers are borrowed from the
 * delivery and valid until its envelope is destroyed. */
#ifndef DLQ_DEADLETTER_H
#define DLQ_DEADLETTER_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "redact.h"

struct dlq_str {
	const char	*p;	/* NULL: absent */
	size_t		 n;
};

struct dlq_xdeath {
	struct dlq_str		 queue;
	struct dlq_str		 reason;
	struct dlq_str		 exchange;
	struct dlq_str		 original_expiration;
	const amqp_array_t	*routing_keys;	/* NULL: absent */
	int64_t			 count;		/* -1: absent or unreadable */
	int64_t			 time;		/* seconds; -1: absent */
};

#define DLQ_XDEATH_MAX		16
#define DLQ_PROBLEMS_MAX	8

struct dlq_dead_letter {
	struct dlq_str		 dlq;		/* the queue it was consumed from */
	struct dlq_str		 queue;		/* the work queue that killed it */
	struct dlq_str		 message_id;
	struct dlq_str		 correlation_id;
	int64_t			 retry_count;	/* valid if has_retry_count */
	bool			 has_retry_count;
	int64_t			 delivery_count;
	bool			 has_delivery_count;
	struct dlq_xdeath	 xdeath[DLQ_XDEATH_MAX];	/* newest first */
	size_t			 n_xdeath;	/* entries kept */
	size_t			 n_xdeath_total;	/* entries in the header */
	struct dlq_str		 first_death_queue;
	struct dlq_str		 first_death_reason;
	const char		*error_header;	/* which header held the error */
	const amqp_field_value_t *error;	/* NULL: none */
	const amqp_basic_properties_t *props;
	const void		*body;
	size_t			 body_len;
	const char		*problems[DLQ_PROBLEMS_MAX];	/* static text */
	size_t			 n_problems;
};

/* Decodes `props` and `body` as delivered from `dlq`; `fallback_queue` is
 * the delivery's routing key (the dead-letter routing key names the work
 * queue) and is used when no header names the source queue. */
void	dlq_deadletter_decode(struct dlq_dead_letter *,
	    const amqp_basic_properties_t *props, amqp_bytes_t body,
	    struct dlq_str dlq, struct dlq_str fallback_queue,
	    const struct dlq_strlist *error_headers);

/* Reads an integer counter sent as any AMQP integer type, an integral
 * float or decimal, or a string of digits. */
bool	dlq_field_to_i64(const amqp_field_value_t *, int64_t *);

/* Milliseconds since the epoch of an AMQP timestamp property (0 for 0).
 * The specification counts seconds; some clients write milliseconds
 * (amqplib's `timestamp: Date.now()`), microseconds or nanoseconds. A
 * count of seconds of 10^11 or more would be past the year 5000, so such
 * a value is read in the first of those units that puts it before that.
 * *unit (may be NULL): "seconds", "milliseconds", ... as read. */
int64_t	dlq_timestamp_ms(uint64_t, const char **unit);

/* Finds a header by name; NULL when absent. */
const amqp_field_value_t *dlq_table_get(const amqp_table_t *, const char *);

/* Appends a field value / table as JSON. Timestamps become RFC 3339,
 * byte strings are JSON strings (bad UTF-8 replaced). */
void	dlq_field_json(struct dlq_buf *, const amqp_field_value_t *);
void	dlq_table_json(struct dlq_buf *, const amqp_table_t *);

/* Appends the error text (redacted, at most `max` bytes, not quoted). */
void	dlq_deadletter_error_text(const struct dlq_dead_letter *,
	    const struct dlq_redact *, size_t max, struct dlq_buf *);

/* When the message first died, in ms: the oldest time of its x-death
 * entries (an entry keeps the time of the first death for its queue and
 * reason when the broker counts it again); 0 when none has one. */
int64_t	dlq_deadletter_first_death_ms(const struct dlq_dead_letter *);

/* Appends the x-death list as a JSON array (as in the log line). */
void	dlq_deadletter_xdeath_json(const struct dlq_dead_letter *,
	    struct dlq_buf *);

/* Appends the fields of the `dead_letter` log line (after
 * dlq_log_begin()): ids, counters, x-death (`xdeath`: from
 * dlq_deadletter_xdeath_json(), shared with the archive record), the
 * error text `error` (from dlq_deadletter_error_text(); NULL: none) and
 * the redacted payload, which is first written to `scratch` (reset here
 * and kept: a consumer reuses it for every dead letter). */
void	dlq_deadletter_log_fields(const struct dlq_dead_letter *,
	    const struct dlq_redact *, const struct dlq_buf *error,
	    const struct dlq_buf *xdeath, struct dlq_buf *scratch,
	    struct dlq_buf *);

#define DLQ_ERROR_TEXT_MAX	1024	/* bytes of error text kept */

#endif
