/* missing.c - the operations the PostgreSQL backend does not have yet
 * (issue 62 brings them one by one): each fails, saying so, as an
 * archive error would. What a worker on PostgreSQL does today: it
 * archives every dead letter once across replicas and acks it after the
 * commit, logs it, alerts on it (the leader's digests), counts it in
 * /metrics and the threshold alerts, audits the control requests,
 * answers dlqctl stats, list, show, groups and audit, takes assign,
 * drop, reopen, purge and replay, and applies retention (cases.c,
 * triage.c, audit.c, retention.c, replay.c); groups --by-cause answers
 * this error, and the automatic redrive and the refreshes of classes and
 * signatures do not run. */
#include "pg.h"

#include <stdio.h>

#include "proto.h"

static const char NOT_YET[] = "not available on a PostgreSQL archive yet "
    "(groups --by-cause and the automatic redrive are not; use an SQLite "
    "archive, archive.path, for them)";

static int
missing(struct dlq_pg *a, const char *op)
{
	(void)a;
	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "%s: %s", op, NOT_YET);
	return -1;
}

/* A case query's error: its text in the answer. */
static int
missing_out(struct dlq_pg *a, const char *op, struct dlq_buf *out)
{
	(void)missing(a, op);
	dlq_buf_reset(out);
	dlq_buf_adds(out, NOT_YET);
	return DLQ_ERROR;
}

int
dlq_pg_cases_redrive_status(struct dlq_pg *a, const char *queues_json,
    struct dlq_buf *out)
{
	(void)queues_json;
	return missing_out(a, "dlq_cases_redrive_status", out);
}

int
dlq_pg_cases_redrive_resume(struct dlq_pg *a, const char *queue,
    const char *reason, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	(void)queue;
	(void)reason;
	(void)actor;
	(void)now_ms;
	return missing_out(a, "dlq_cases_redrive_resume", out);
}

int
dlq_pg_causes_list(struct dlq_pg *a, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, size_t max_groups, struct dlq_buf *out)
{
	(void)queue;
	(void)class;
	(void)since_ms;
	(void)limit;
	(void)max_groups;
	return missing_out(a, "dlq_causes_list", out);
}

int64_t
dlq_pg_alert_backlog(struct dlq_pg *a, int64_t since_ms, int max_groups,
    struct dlq_digest *out)
{
	(void)since_ms;
	(void)max_groups;
	(void)out;
	return missing(a, "dlq_alert_backlog");
}

int
dlq_pg_classrefresh_run(struct dlq_pg *a, const char *path,
    const struct dlq_classifier *k)
{
	(void)path;
	(void)k;
	return missing(a, "dlq_classrefresh_run");
}

bool
dlq_pg_redrive_circuit_open(struct dlq_pg *a, const char *queue)
{
	(void)queue;
	missing(a, "dlq_redrive_circuit_open");
	return false;
}

int64_t
dlq_pg_redrive_returned(struct dlq_pg *a, const char *queue, int64_t since_ms,
    int64_t until_ms)
{
	(void)queue;
	(void)since_ms;
	(void)until_ms;
	return missing(a, "dlq_redrive_returned");
}

void
dlq_pg_redrive_trip(struct dlq_pg *a, const char *queue, int64_t now_ms,
    int64_t redriven, int64_t returned)
{
	(void)queue;
	(void)now_ms;
	(void)redriven;
	(void)returned;
	missing(a, "dlq_redrive_trip");
}

void
dlq_pg_redrive_give_up(struct dlq_pg *a, const char *queue, int64_t now_ms,
    int64_t max_cycles, const char *classes_json, dlq_redrive_left_fn each,
    void *arg)
{
	(void)queue;
	(void)now_ms;
	(void)max_cycles;
	(void)classes_json;
	(void)each;
	(void)arg;
	missing(a, "dlq_redrive_give_up");
}

void
dlq_pg_redrive_leave(struct dlq_pg *a, int64_t id, int64_t now_ms,
    const char *note, dlq_redrive_left_fn each, void *arg)
{
	(void)id;
	(void)now_ms;
	(void)note;
	(void)each;
	(void)arg;
	missing(a, "dlq_redrive_leave");
}

int
dlq_pg_redrive_candidates(struct dlq_pg *a, const char *queue,
    int64_t born_before_ms, int64_t max_cycles, const char *classes_json,
    int64_t limit, void (*each)(void *arg, int64_t id), void *arg)
{
	(void)queue;
	(void)born_before_ms;
	(void)max_cycles;
	(void)classes_json;
	(void)limit;
	(void)each;
	(void)arg;
	return missing(a, "dlq_redrive_candidates");
}

int
dlq_pg_sigrefresh_run(struct dlq_pg *a, const char *path)
{
	(void)path;
	return missing(a, "dlq_sigrefresh_run");
}
