/* cases.h - what operators ask of the archive: list, show, stats, groups,
 * assign, drop, reopen, purge, audit.
 *
 * Every answer is JSON appended to `out`, built by SQLite's JSON functions
 * where it can. A dead letter is a case: open -> assigned (owner,
 * decision, escalate-at) -> replayed or discarded (a drop undone by
 * reopen); nothing is deleted but payloads and headers, by retention.
 * Called by the control thread on its own archive handle; the worker's
 * main thread applies retention. */
#ifndef DLQ_CASES_H
#define DLQ_CASES_H

struct dlq_archive;

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

/* The actor of what the worker does itself, in attempts and audit: its
 * automatic redrive, a change of class (classrefresh.c). */
#define DLQ_REDRIVE_ACTOR	"dlq-worker"
/* The command of the redrive's audit entries (one per redriven batch). */
#define DLQ_REDRIVE_AUDIT_COMMAND	"redrive"
/* The command of the worker's change of a record's class, at the first
 * start under other classification rules (classrefresh.c). */
#define DLQ_RECLASSIFY_AUDIT_COMMAND	"reclassify"


struct dlq_list_filter {
	const char	*queue;		/* work queue or DLQ name; NULL: any */
	const char	*status;
	const char	*class;
	const char	*signature;
	const char	*message_id;	/* exact; NULL: any */
	const char	*correlation_id;
	const char	*owner;		/* exact; NULL: any */
	int64_t		 since_ms;	/* wall clock; 0: any */
	int64_t		 before_id;	/* older than this id; 0: any */
	int64_t		 limit;
	bool		 reopenable;	/* only discarded ones a reopen takes */
	const char	*text;		/* in message_id or correlation_id;
					 * NULL: any */
	bool		 text_in_error;	/* and in the error text */
	bool		 preview;	/* each one's payload_preview: its
					 * first DLQ_PREVIEW_BYTES */
};

#define DLQ_PREVIEW_BYTES	120

int	dlq_cases_list(struct dlq_archive *, const struct dlq_list_filter *,
	    struct dlq_buf *out);
/* Where the archive is: [newest record id, newest audit id] (null for
 * an empty table), two index lookups. Any change an operator sees moves
 * one of them (a new dead letter, or a change, which is audited): the
 * console's conditional requests compare it. */
int	dlq_cases_version(struct dlq_archive *, struct dlq_buf *out);
/* `payload`: include headers and the payload (text, or base64). */
int	dlq_cases_show(struct dlq_archive *, int64_t id, bool payload, struct dlq_buf *out);
/* Counts, escalations (cases.owner_sla `owner_sla_ms`), decision
 * measures and redrive outcomes. */
int	dlq_cases_stats(struct dlq_archive *, int64_t now_ms, int64_t owner_sla_ms,
	    struct dlq_buf *out);
/* The queues dead letters came from since `since_ms`, the most first:
 * [{"queue", "dead_lettered"}], at most `limit`. */
int	dlq_cases_traffic(struct dlq_archive *, int64_t since_ms, int64_t limit,
	    struct dlq_buf *out);
/* Groups by signature, the largest first, of `queue` and `class` (NULL:
 * any); `since_ms` (wall clock; 0: all time): count, unresolved and last
 * seen of the records received since then, first seen the signature's
 * first record ever. */
int	dlq_cases_groups(struct dlq_archive *, const char *queue, const char *class,
	    int64_t since_ms, int64_t limit, struct dlq_buf *out);
/* Mutations answer {"changed":N,"results":[{"id":..,"ok":..,"error":..}]}
 * and return OK only when every id changed. */
int	dlq_cases_assign(struct dlq_archive *, const int64_t *ids, size_t n,
	    const char *owner, const char *decision, const char *evidence,
	    int64_t escalate_at_ms, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
int	dlq_cases_drop(struct dlq_archive *, const int64_t *ids, size_t n,
	    const char *reason, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
/* Undoes a drop: a discarded record is open again (assigned when it has
 * an owner), unless its payload was purged or a replay of it may have
 * arrived (an attempt published, or of unknown outcome). */
int	dlq_cases_reopen(struct dlq_archive *, const int64_t *ids, size_t n,
	    struct dlq_buf *out);
/* How many records a purge with `cutoff_ms` would reach: answers
 * {"purgeable":N,"before_ms":cutoff_ms}. */
int	dlq_cases_purgeable(struct dlq_archive *, int64_t cutoff_ms, struct dlq_buf *out);
/* Deletes payloads and headers of resolved records received before
 * `cutoff_ms`; answers {"purged":N,"before_ms":cutoff_ms}. It goes
 * DLQ_PURGE_CHUNK ids at a time, each a transaction taking its turn
 * among the process's writers (dlq_archive_writer_lock): consumers commit
 * between two, however large the purge. The caller must not hold the
 * writer lock. `go_on` (may be NULL) is told after each chunk but the
 * last how many were purged so far and how much of the ids to walk was
 * walked (percent, 0..99); when it says no, the purge stops there and
 * answers {..., "interrupted":true}: the rest is for the next purge. */
#define DLQ_PURGE_CHUNK	5000
typedef bool	(*dlq_purge_go_on)(long long purged, int percent, void *arg);
int	dlq_cases_purge(struct dlq_archive *, int64_t cutoff_ms, int64_t now_ms,
	    dlq_purge_go_on go_on, void *arg, struct dlq_buf *out);

/* Dead letters of replayed messages that came back: replay_of in the JSON
 * array `ids_json`, received since `since_ms`. */
int	dlq_cases_returns(struct dlq_archive *, const char *ids_json, int64_t since_ms,
	    struct dlq_buf *out);

/* Redrive per configured queue (`queues_json`, a JSON array): circuit,
 * published, left for humans. */
int	dlq_cases_redrive_status(struct dlq_archive *, const char *queues_json,
	    struct dlq_buf *out);
/* Closes the open circuit of `queue`; NOT_FOUND when none is open. */
int	dlq_cases_redrive_resume(struct dlq_archive *, const char *queue,
	    const char *reason, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);

int	dlq_cases_audit_add(struct dlq_archive *, int64_t now_ms, const char *actor,
	    long uid, const char *command, const char *args_json,
	    const char *result);
/* Which audit entries, newest first. */
struct dlq_audit_filter {
	const char	*actor;		/* exact; NULL: any */
	const char	*command;	/* exact; NULL: any */
	int64_t		 since_ms;	/* wall clock; 0: any */
	int64_t		 before_id;	/* older than this entry; 0: any */
	int64_t		 limit;
};

int	dlq_cases_audit(struct dlq_archive *, const struct dlq_audit_filter *,
	    struct dlq_buf *out);

/* Deletes the audit entries older than `cutoff_ms` and their links to
 * records, in one write turn; how many into *deleted. 0 or -1 (the
 * error in `out`). */
int	dlq_cases_audit_expire(struct dlq_archive *, int64_t cutoff_ms, long long *deleted,
	    struct dlq_buf *out);

#endif
