/* replay.h - the replay eligibility policy and the replayed message.
 *
 * A replay is a new attempt of the same logical message: same body, same
 * properties (message_id, correlation_id, ...), the original headers minus
 * what the broker owns (x-death, x-first-death-*, x-last-death-*), plus
 * x-replay-count, x-replayed-by, x-replayed-at, x-replay-reason and
 * x-replay-of. A message without message_id keeps having none. Pure; the
 * server side (replaysrv.c) and dlqctl's live-queue mode share it. */
#ifndef DLQ_REPLAY_H
#define DLQ_REPLAY_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"

#define DLQ_REPLAY_REASON_MAX	256	/* bytes of x-replay-reason */

/* What the policy looks at. */
struct dlq_replay_facts {
	const char	*status;	/* open, assigned, replaying, ... */
	const char	*class;
	const char	*owner;		/* NULL: none */
	int64_t		 age_ms;
	int64_t		 replay_count;	/* replays this message went through */
	int64_t		 evidence_age_ms;	/* of the newest evidence; -1:
						   none */
};

/* True when eligible; otherwise `why` says which rule refused it. `force`
 * (with a reason) lifts the class rule and allows a claim from
 * 'replaying' (an attempt whose outcome is unknown). */
bool	dlq_replay_eligible(const struct dlq_replay_policy *,
	    const struct dlq_replay_facts *, bool force, char *why, size_t n);

/* When a message was sent, ms since the epoch: its AMQP `timestamp`
 * (0: none; in whichever unit its client wrote, dlq_timestamp_ms) when
 * that is before `died_ms`, else `died_ms` (when it died, or was found
 * dead). The age replay.max_age is held against counts from it. */
int64_t	dlq_replay_born_ms(uint64_t timestamp, int64_t died_ms);

/* The policy as JSON, recorded with each attempt. */
void	dlq_replay_policy_json(const struct dlq_replay_policy *,
	    struct dlq_buf *);

/* Where a replay goes, as operators read it: "exchange/routing-key",
 * "(default)/queue" for the default exchange. */
void	dlq_replay_target_name(const char *exchange, const char *routing_key,
	    char *buf, size_t n);

/* The headers to send: `orig` minus the broker-owned ones (and
 * x-retry-count when `reset_retries`) and the configured error headers
 * (`error_headers`, may be NULL: the error they held was this death's;
 * the archive keeps it in the lineage, and a message that dies again
 * without a new one must not show the old), plus the replay headers. Entries
 * point into `orig` and `extra` (5 entries the caller provides), both of
 * which must outlive the result. */
struct dlq_replay_mark {
	int64_t		 replay_count;	/* the new value */
	const char	*by;
	int64_t		 at_s;
	const char	*reason;
	int64_t		 replay_of;	/* archive id, 0: none */
	const struct dlq_strlist *error_headers; /* not sent; NULL: none */
};
int	dlq_replay_headers(const amqp_table_t *orig, bool reset_retries,
	    const struct dlq_replay_mark *, amqp_table_entry_t extra[5],
	    amqp_table_t *out);		/* 0 / -1 (out of memory) */
void	dlq_replay_headers_free(amqp_table_t *);

#endif
