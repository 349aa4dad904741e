/* replaysrv.h - the worker's side of a replay, behind the control socket.
 *
 * dlqctl drives a replay; the worker decides and records:
 *   replay_plan   which records a selection holds, eligible or not and why,
 *                 and where each would go (a dry run changes nothing)
 *   replay_claim  re-checks the policy and claims records (status
 *                 'replaying', an attempt with outcome 'unknown' and the
 *                 policy checked, at what time) in one transaction, and
 *                 hands out the messages to publish; a second claim of
 *                 the same record is refused. Up to DLQ_REPLAY_CLAIM_MAX
 *                 per request, in one transaction (one fsync); once the
 *                 messages handed out pass DLQ_REPLAY_CLAIM_BYTES, the
 *                 request's remaining ids are not looked at and come back,
 *                 in order, as `deferred`: the client asks again with them
 *   replay_finish records the broker's verdict: published -> 'replayed';
 *                 failed -> replayable again; unknown -> stays 'replaying'
 * A crash of dlqctl between claim and finish leaves 'replaying' with an
 * unknown outcome, never a silent success. */
#ifndef DLQ_REPLAYSRV_H
#define DLQ_REPLAYSRV_H

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "buf.h"
#include "config.h"

#define DLQ_REPLAY_CLAIM_MAX	500
/* Messages (base64 bodies) per claim answer; the first claim is handed
 * out whatever its size, so a claim always makes progress. */
#define DLQ_REPLAY_CLAIM_BYTES	(8 * 1024 * 1024)

enum dlq_replay_rc { DLQ_REPLAY_OK, DLQ_REPLAY_USAGE, DLQ_REPLAY_NOT_FOUND,
	DLQ_REPLAY_REFUSED, DLQ_REPLAY_ERROR };

/* Each takes the request object and appends the answer's data to `out`;
 * on failure `why` holds the reason. */
int	dlq_replay_plan(sqlite3 *, const struct dlq_config *, const cJSON *req,
	    struct dlq_buf *out, char *why, size_t whylen);
int	dlq_replay_claim(sqlite3 *, const struct dlq_config *, const cJSON *req,
	    const char *actor, struct dlq_buf *out, char *why, size_t whylen);
int	dlq_replay_finish(sqlite3 *, const cJSON *req, const char *actor,
	    struct dlq_buf *out, char *why, size_t whylen);

#endif
