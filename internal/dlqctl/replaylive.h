/* replaylive.h - dlqctl replay --from-queue. */
#ifndef DLQ_REPLAYLIVE_H
#define DLQ_REPLAYLIVE_H

#include "config.h"
#include "replayopts.h"

/* Replays (or, without execute, plans) the messages waiting in
 * o->from_queue; returns the exit code, as dlq_replay_run. */
int	dlq_replay_live(const struct dlq_config *, const struct dlq_replay_opts *);

#endif
