/* replaydecide.h - what the worker decides about a replay, whatever the
 * backend (replaysrv.h): the requests' checks, a record's eligibility
 * under the replay policy and where it would go, the evidence and policy
 * an attempt records, and the answers' JSON. A backend reads the rows and
 * messages and writes the claims and verdicts; the rules are here, once. */
#ifndef DLQ_REPLAYDECIDE_H
#define DLQ_REPLAYDECIDE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "proto.h"
#include "replay.h"

#define DLQ_REPLAY_PLAN_MAX	10000

/* The columns of a record a decision needs. */
struct dlq_replay_row {
	int64_t		 id;
	char		 status[16];
	char		 class[16];
	char		 owner[128];
	bool		 has_owner;
	int64_t		 received_at;
	int64_t		 timestamp;	/* 0: none */
	int64_t		 replay_count;
	char		 queue[256];
	char		 message_id[256];
	char		 evidence[DLQ_CONTROL_TEXT_MAX + 1]; /* the case's */
	int64_t		 evidence_at;	/* 0: none */
	int64_t		 first_death_ms; /* oldest x-death time; 0: none */
};

/* Text of a column into out[n], cut whole characters short when it does
 * not fit (an evidence assigned before its length was checked). */
void	dlq_replay_col(char *out, size_t n, const void *text, size_t len);

/* A plan request's selection: checked, with its limit and since; else
 * DLQ_USAGE and why. */
struct dlq_replay_selection {
	const cJSON	*ids;		/* an array, or NULL: by filter */
	const char	*queue;		/* queue or DLQ name, or NULL */
	const char	*class;
	const char	*signature;
	int64_t		 limit;
	int64_t		 since_ms;	/* received at or after; 0: any */
};
int	dlq_replay_plan_check(const struct dlq_config *, const cJSON *req,
	    struct dlq_replay_selection *, char *why, size_t whylen);
/* One plan entry: the record, eligible or not and why, and its target. */
void	dlq_replay_plan_item(struct dlq_buf *out, const struct dlq_config *,
	    const cJSON *req, const struct dlq_replay_row *, bool first);
/* One plan entry of an id the archive does not hold. */
void	dlq_replay_plan_missing(struct dlq_buf *out, int64_t id, bool first);

/* A claim request: 1..DLQ_REPLAY_CLAIM_MAX ids and a reason, its texts
 * within their limit. DLQ_OK or DLQ_USAGE. */
int	dlq_replay_claim_check(const cJSON *req, char *why, size_t whylen);

/* What a claim of one eligible record records and answers. */
struct dlq_replay_grant {
	struct dlq_buf	 policy;	/* the policy checked, JSON */
	struct dlq_buf	 evidence;	/* what the attempt relied on; empty:
					 * none */
	const char	*exchange;
	const char	*routing_key;
	char		 target[600];	/* for the attempt */
	int64_t		 now;		/* checked at, wall clock */
};
/* Decides on `r` now: true with the grant filled (release it), or false
 * with why (nothing to release). */
bool	dlq_replay_grant(const struct dlq_config *, const cJSON *req,
	    const struct dlq_replay_row *, struct dlq_replay_grant *,
	    char *why, size_t n);
void	dlq_replay_grant_release(struct dlq_replay_grant *);

/* A message's columns as a backend read them (text: its bytes, NULL for
 * SQL NULL). */
struct dlq_replay_message {
	const void	*props[8];	/* message_id, correlation_id, type,
					 * content_type, content_encoding,
					 * app_id, reply_to, user_id */
	size_t		 props_len[8];
	bool		 has_timestamp, has_priority;
	int64_t		 timestamp, priority;
	const void	*headers;	/* AMQP table as encoded */
	size_t		 headers_len;
	const void	*body;
	size_t		 body_len;
};
/* The message to publish, as dlqctl reads it: properties, raw headers
 * and body in base64. */
void	dlq_replay_message_json(struct dlq_buf *out, int64_t id,
	    const struct dlq_replay_message *);

/* Appends one claim to `claims` (`message`: dlq_replay_message_json). */
void	dlq_replay_claim_item(struct dlq_buf *claims, int64_t id,
	    int64_t attempt, int64_t replay_count, const char *actor,
	    const struct dlq_replay_grant *, const struct dlq_buf *message);
/* Appends a refused id with why. */
void	dlq_replay_refusal(struct dlq_buf *refused, int64_t id,
	    const char *why);
/* Appends an id left for the next request. */
void	dlq_replay_defer(struct dlq_buf *deferred, int64_t id);
/* The claim's answer: {"claims":[..],"refused":[..],"deferred":[..]}. */
void	dlq_replay_claim_answer(struct dlq_buf *out,
	    const struct dlq_buf *claims, const struct dlq_buf *refused,
	    const struct dlq_buf *deferred);

/* A finish request: 1..DLQ_REPLAY_CLAIM_MAX results, each with an
 * attempt and an outcome. DLQ_OK or DLQ_USAGE. */
int	dlq_replay_finish_check(const cJSON *req, char *why, size_t whylen);
/* Result i's fields (the request checked). */
void	dlq_replay_finish_result(const cJSON *result, int64_t *attempt,
	    const char **outcome, const char **detail);
/* The finish's answer for `done` of the request's results finished:
 * DLQ_OK, or DLQ_NOT_FOUND with why when some were not open. */
int	dlq_replay_finish_answer(const cJSON *req, int done,
	    struct dlq_buf *out, char *why, size_t whylen);

#endif
