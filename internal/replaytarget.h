/* replaytarget.h - where a dry run's replay would go, looked at on the
 * broker with passive declares (nothing is created or changed): the
 * target exchange exists; for the default exchange, the target queue
 * exists, with its ready messages and consumers. */
#ifndef DLQ_REPLAYTARGET_H
#define DLQ_REPLAYTARGET_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "config.h"

/* The distinct targets of the eligible entries of `plan` (each entry
 * with "eligible", "exchange" and "routing_key"), looked at on the
 * broker. Returns an array of objects: exchange, routing_key, count (of
 * the plan's messages going there), exists (absent when it could not be
 * told), for a queue messages and consumers, and problem (text) when
 * something is wrong. NULL with why in `why` when the broker could not
 * be asked at all. */
cJSON	*dlq_replay_targets(const struct dlq_config *, const cJSON *plan,
	    char *why, size_t n);

/* Prints them as lines under "targets:", terminal-safe. */
void	 dlq_replay_targets_print(FILE *, const cJSON *targets);

#endif
