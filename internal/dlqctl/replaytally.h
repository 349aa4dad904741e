/* replaytally.h - what a dlqctl replay run counts, prints and notes in
 * the worker's audit: shared by the archive replay (replayrun.c) and the
 * live-queue one (replaylive.c). */
#ifndef DLQ_REPLAYTALLY_H
#define DLQ_REPLAYTALLY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "publisher.h"
#include "replayopts.h"

#define REFUSAL_KINDS	16

struct dlq_tally {
	bool	 dry;		/* published counts the eligible */
	size_t	 total, done, published, refused, failed, unknown;
	size_t	 given_back;	/* claimed, not sent: replayable */
	size_t	 originals_back;	/* live: published, original unacked */
	size_t	 posted;	/* sends tried: what --rate paces */
	bool	 blocked;	/* the broker blocks publishing: stop */
	char	 why[REFUSAL_KINDS][160];
	size_t	 why_n[REFUSAL_KINDS];
	cJSON	*refusals;	/* executing: what was refused and why */
	size_t	 refusals_bytes, refusals_unlisted;
	int64_t	 start_ms;
	cJSON	*results;
	cJSON	*canary;	/* NULL: no canary; else what it showed */
	cJSON	*targets;	/* a dry run: where the eligible would go */
	cJSON	*plan;		/* a live dry run: each message, as a plan */
	char	 unseen[256];	/* why they could not be looked at, or "" */
	int64_t	 delivery_count_max;	/* live: of what went back; -1 */
};

void	dlq_tally_init(struct dlq_tally *t);
/* A live-queue run gives back what it does not replay, and a quorum
 * queue counts that as a delivery (up to RabbitMQ 4.2 every return; 4.3
 * counts basic.reject only): past its delivery limit (20 by default
 * since 4.0) it drops or dead-letters the message. What such a queue
 * handed out before carries x-delivery-count: `deliveries`, -1 without
 * it. */
void	dlq_tally_note_return(struct dlq_tally *t, int64_t deliveries);
/* The string `key` of `o`, or "". */
const char *dlq_tally_str(const cJSON *o, const char *key);
/* A dry run's targets, looked at on the broker. */
void	dlq_tally_look_targets(const struct dlq_config *c, struct dlq_tally *t);
void	dlq_tally_targets_json(const struct dlq_tally *t, cJSON *out);
void	dlq_tally_targets_text(const struct dlq_tally *t);
/* Counts a refusal by its reason; an executing run also keeps what was
 * refused (archive id, or a live delivery's message id) and why, for the
 * audit (as many as fit in one control request: their size as they will
 * be sent, escapes included, with the id again in "ids"). */
void	dlq_tally_refuse(struct dlq_tally *t, int64_t id,
	    const char *message_id, const char *why);
void	dlq_tally_result(struct dlq_tally *t, int64_t id,
	    const char *message_id, enum dlq_pub_outcome o,
	    const char *detail);
void	dlq_tally_progress(const struct dlq_tally *t, bool end);
/* Waits for the next slot of a `rate` per second schedule. */
void	dlq_tally_pace(const struct dlq_tally *t, int64_t rate);
int	dlq_tally_summary(const struct dlq_tally *t, bool json);
/* One line of a dry run's plan: the archive id (or a live delivery's
 * message id), eligible or not, the target, and why not. */
void	dlq_tally_plan_line(const cJSON *i);
/* Sends `req` (consumed); the answer, or NULL with why in `why` and,
 * when `code` is not NULL, the exit code it calls for there. */
cJSON *dlq_replay_ask(const struct dlq_config *c, cJSON *req, char *why,
	    size_t n, int *code);
void	dlq_replay_add_options(cJSON *r, const struct dlq_replay_opts *o);
/* Records a run in the worker's audit table (and checks the role): what
 * ran, its result, and the refusals an executing run kept. Returns
 * DLQ_EXIT_OK, or the exit code of the failure said in `why`. */
int	dlq_tally_note(const struct dlq_config *c,
	    const struct dlq_replay_opts *o, const char *what,
	    const char *result, struct dlq_tally *t, char *why, size_t n,
	    char *actor, size_t actor_len);

#endif
