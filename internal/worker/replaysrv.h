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

struct dlq_archive;

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "buf.h"
#include "config.h"
#include "proto.h"

/* Each takes the request object and appends the answer's data to `out`;
 * on failure `why` holds the reason. */
int	dlq_replay_plan(struct dlq_archive *, const struct dlq_config *, const cJSON *req,
	    struct dlq_buf *out, char *why, size_t whylen);
int	dlq_replay_claim(struct dlq_archive *, const struct dlq_config *, const cJSON *req,
	    const char *actor, struct dlq_buf *out, char *why, size_t whylen);
int	dlq_replay_finish(struct dlq_archive *, const cJSON *req, const char *actor,
	    struct dlq_buf *out, char *why, size_t whylen);

#endif
