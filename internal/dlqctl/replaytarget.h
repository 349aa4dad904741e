/* replaytarget.h - where a dry run's replay (or a canary) would go,
 * looked at on the broker with passive declares (nothing is created or
 * changed): the target exchange exists; for the default exchange, the
 * target queue exists, with its ready messages and consumers. */
#ifndef DLQ_REPLAYTARGET_H
#define DLQ_REPLAYTARGET_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"

/* Distinct targets kept (more are not counted, nor looked at). */
#define DLQ_REPLAY_TARGETS_MAX	100

/* Counts one message going to `exchange` ("": the default exchange)
 * with `routing_key` in `targets`, an array of objects: exchange,
 * routing_key, count. */
void	 dlq_replay_targets_add(cJSON *targets, const char *exchange,
	    const char *routing_key);

/* Looks at each target on the broker and adds to its object: exists
 * (absent when it could not be told), for a queue messages and
 * consumers, and problem (text) when something is wrong. Returns -1
 * with why in `why` when the broker could not be asked at all. */
int	 dlq_replay_targets_look(const struct dlq_config *, cJSON *targets,
	    char *why, size_t n);

/* Whether a target reached through the default exchange, looked at,
 * has no queue or no consumer (or could not be looked at): then true,
 * with what it lacks in `why` ("no consumer on queue 'orders'"). A
 * target through another exchange cannot be told so and is passed. */
bool	 dlq_replay_targets_unconsumed(const cJSON *targets, char *why,
	    size_t n);

/* Prints them as a table (TARGET, MESSAGES, ON THE BROKER), terminal-
 * safe; nothing when there are none. */
void	 dlq_replay_targets_print(FILE *, const cJSON *targets);

#endif
