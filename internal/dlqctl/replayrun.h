/* replayrun.h - dlqctl replay: plan, then claim, publish and finish one
 * message at a time, rate limited, with progress and a summary.
 *
 * With a canary (K, watch) the first K eligible go out alone; the rest
 * follow only if none of the K died again within the watch. Otherwise
 * the run stops, names those that came back, and leaves the rest
 * untouched (exit code 3).
 *
 * Without `execute` it is a dry run: the plan is printed (eligible or not
 * and why, and where each would go) and nothing is published. Ctrl-C
 * stops after the current message, with the summary. The live-queue mode
 * (`from_queue`) reads a DLQ the worker does not monitor directly. */
#ifndef DLQ_REPLAYRUN_H
#define DLQ_REPLAYRUN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "replayopts.h"

/* Returns the exit code: 0 when nothing failed or stayed unknown. */
int	dlq_replay_run(const struct dlq_config *, const struct dlq_replay_opts *);

#endif
