/* replayjob.h - a replay the console executes: its claims, publishing
 * and finishes, in a thread of its own so that the HTTP listener keeps
 * answering (/metrics, /readyz) while it runs.
 *
 * The job goes through dlq_requests_handle() as dlqctl's replay goes
 * through the control socket: replay_claim, then each claimed message
 * published with a confirm awaited, then replay_finish, chunk by chunk,
 * at `rate` messages a second (0: unpaced), as the console user. With a
 * canary, the first `canary` go first, and the rest only when none of
 * them died again within `canary_watch_ms`. One job at a time per worker;
 * the last one stays readable until the next. */
#ifndef DLQ_CONSOLE_REPLAYJOB_H
#define DLQ_CONSOLE_REPLAYJOB_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "proto.h"

struct dlq_replay_jobs;

struct dlq_replay_order {
	const int64_t	*ids;		/* the eligible ids, in order */
	int		 n;
	const char	*reason, *evidence;	/* evidence may be NULL */
	const char	*to_exchange, *routing_key;	/* NULL: default */
	bool		 force, reset_retries;
	int64_t		 rate;		/* a second; 0: unpaced */
	int64_t		 canary;	/* 0: none */
	int64_t		 canary_watch_ms;
};

struct dlq_replay_jobs *dlq_replay_jobs_new(const struct dlq_config *);
/* Stops a running job (what it claimed and did not send is given back)
 * and waits for it. */
void	dlq_replay_jobs_free(struct dlq_replay_jobs *);
/* Starts a job of `user` (audited as `actor`); its id, or 0 with `why`
 * when one is running or no thread starts. */
int64_t	dlq_replay_job_start(struct dlq_replay_jobs *,
	    const struct dlq_replay_order *, const char *actor,
	    enum dlq_role role, char *why, size_t n);
/* The job `id` as JSON; false when it is not the last one. */
bool	dlq_replay_job_json(struct dlq_replay_jobs *, int64_t id,
	    struct dlq_buf *out);

#endif
