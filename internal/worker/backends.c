/* backends.c - the storage seam's one implementation of its operations:
 * a handle names the backend it was opened on, and each operation of
 * archive.h, cases.h, causes.h, alertbacklog.h, classrefresh.h,
 * replaysrv.h, replicas.h, import.h, housekeep.h, gauges.h, redrivedb.h
 * and sigrefresh.h
 * passes to that backend's function of the same name. The writer mutex,
 * which orders the process's write transactions whatever the backend,
 * lives here. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "alertbacklog.h"
#include "archive.h"
#include "cases.h"
#include "causes.h"
#include "classrefresh.h"
#include "gauges.h"
#include "housekeep.h"
#include "import.h"
#include "pgdb.h"
#include "redrivedb.h"
#include "replaysrv.h"
#include "replicas.h"
#include "sigrefresh.h"
#include "sqlitedb.h"

/* One of the two is set: SQLite without archive.url, else PostgreSQL. */
struct dlq_archive {
	struct dlq_sqlite	*sqlite;
	struct dlq_pg		*pg;
};

/* SQLite's busy handler polls with sleeps of up to 100 ms: with dozens of
 * consumers committing at once, one of them can wait past the busy
 * timeout while others keep winning (a flood of 37 queues did). Writers
 * of this process therefore queue on a mutex first and meet SQLite's
 * lock only when it is theirs; the busy timeout is left for writers in
 * other processes. On PostgreSQL it orders the consumers' turns on the
 * one connection they share. */
static pthread_mutex_t writer = PTHREAD_MUTEX_INITIALIZER;
static atomic_int writer_waiting;	/* threads queued on it */

void
dlq_archive_writer_lock(void)
{
	atomic_fetch_add(&writer_waiting, 1);
	pthread_mutex_lock(&writer);
	atomic_fetch_sub(&writer_waiting, 1);
}

bool
dlq_archive_writer_wanted(void)
{
	return atomic_load(&writer_waiting) > 0;
}

void
dlq_archive_writer_unlock(void)
{
	pthread_mutex_unlock(&writer);
}

int
dlq_archive_claim(const char *path, int *fd)
{
	return dlq_sqlite_claim(path, fd);
}

const char *
dlq_archive_where(const struct dlq_config *c, char *out, size_t n)
{
	if (c->archive_url != NULL)
		dlq_pg_target(c->archive_url, out, n);
	else
		snprintf(out, n, "%s", c->archive_path);
	return out;
}

int
dlq_archive_describe(const struct dlq_config *c, struct dlq_buf *out)
{
	/* an SQLite file is opened (made, migrated) by the worker's start
	 * only: a check changes nothing */
	if (c->archive_url != NULL)
		return dlq_pg_describe(c, out);
	return 0;
}

struct dlq_archive *
dlq_archive_open(const struct dlq_config *c)
{
	struct dlq_archive *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if (c->archive_url != NULL)
		a->pg = dlq_pg_open(c);
	else
		a->sqlite = dlq_sqlite_open(c);
	if (a->pg == NULL && a->sqlite == NULL) {
		free(a);
		return NULL;
	}
	return a;
}

void
dlq_archive_close(struct dlq_archive *a)
{
	if (a == NULL)
		return;
	dlq_pg_close(a->pg);
	dlq_sqlite_close(a->sqlite);
	free(a);
}

struct sqlite3 *
dlq_archive_db(struct dlq_archive *a)
{
	return a->sqlite != NULL ? dlq_sqlite_db(a->sqlite) : NULL;
}

const char *
dlq_archive_errmsg(const struct dlq_archive *a)
{
	if (a != NULL && a->pg != NULL)
		return dlq_pg_errmsg(a->pg);
	return dlq_sqlite_errmsg(a != NULL ? a->sqlite : NULL);
}

int
dlq_archive_cache(struct dlq_archive *a, int64_t kib)
{
	if (a->pg != NULL)
		return dlq_pg_cache(a->pg, kib);
	return dlq_sqlite_cache(a->sqlite, kib);
}

void
dlq_archive_release_memory(struct dlq_archive *a)
{
	if (a->pg != NULL)
		dlq_pg_release_memory(a->pg);
	else
		dlq_sqlite_release_memory(a->sqlite);
}

int
dlq_archive_begin(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_begin(a->pg);
	return dlq_sqlite_begin(a->sqlite);
}

int64_t
dlq_archive_put(struct dlq_archive *a, const struct dlq_record *r,
    bool *duplicate)
{
	if (a->pg != NULL)
		return dlq_pg_put(a->pg, r, duplicate);
	return dlq_sqlite_put(a->sqlite, r, duplicate);
}

int
dlq_archive_commit(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_commit(a->pg);
	return dlq_sqlite_commit(a->sqlite);
}

int
dlq_archive_commit_hold(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_commit_hold(a->pg);
	return dlq_sqlite_commit_hold(a->sqlite);
}

void
dlq_archive_rollback(struct dlq_archive *a)
{
	if (a->pg != NULL)
		dlq_pg_rollback(a->pg);
	else
		dlq_sqlite_rollback(a->sqlite);
}

bool
dlq_archive_moved(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_moved(a->pg);
	return dlq_sqlite_moved(a->sqlite);
}

int
dlq_archive_meta_get(struct dlq_archive *a, const char *key, int64_t *value)
{
	if (a->pg != NULL)
		return dlq_pg_meta_get(a->pg, key, value);
	return dlq_sqlite_meta_get(a->sqlite, key, value);
}

int
dlq_archive_meta_set(struct dlq_archive *a, const char *key, int64_t value)
{
	if (a->pg != NULL)
		return dlq_pg_meta_set(a->pg, key, value);
	return dlq_sqlite_meta_set(a->sqlite, key, value);
}

void
dlq_archive_stop_waits(struct dlq_archive *a, const atomic_bool *stop)
{
	if (a->pg != NULL)
		dlq_pg_stop_waits(a->pg, stop);
	else
		dlq_sqlite_stop_waits(a->sqlite, stop);
}

int
dlq_archive_probe(struct dlq_archive *a, size_t bytes)
{
	if (a->pg != NULL)
		return dlq_pg_probe(a->pg, bytes);
	return dlq_sqlite_probe(a->sqlite, bytes);
}

/* An import reads an SQLite file and writes into PostgreSQL. */
struct dlq_export *
dlq_archive_export_open(const char *path, char *err, size_t n)
{
	return dlq_sqlite_export_open(path, err, n);
}

void
dlq_archive_export_close(struct dlq_export *x)
{
	dlq_sqlite_export_close(x);
}

int
dlq_archive_export_rows(struct dlq_export *x, enum dlq_import_table t,
    int64_t after, struct dlq_buf *json, int64_t *last)
{
	return dlq_sqlite_export_rows(x, t, after, json, last);
}

int64_t
dlq_archive_export_count(struct dlq_export *x, enum dlq_import_table t)
{
	return dlq_sqlite_export_count(x, t);
}

const char *
dlq_archive_export_errmsg(const struct dlq_export *x)
{
	return dlq_sqlite_export_errmsg(x);
}

int
dlq_archive_import_begin(struct dlq_archive *a, char *err, size_t n)
{
	if (a->pg == NULL) {
		snprintf(err, n, "an import writes into a PostgreSQL archive");
		return -1;
	}
	return dlq_pg_import_begin(a->pg, err, n);
}

int64_t
dlq_archive_import_after(struct dlq_archive *a, enum dlq_import_table t)
{
	return dlq_pg_import_after(a->pg, t);
}

int
dlq_archive_import_rows(struct dlq_archive *a, enum dlq_import_table t,
    const char *json)
{
	return dlq_pg_import_rows(a->pg, t, json);
}

int
dlq_archive_import_finish(struct dlq_archive *a)
{
	return dlq_pg_import_finish(a->pg);
}

int64_t
dlq_archive_import_count(struct dlq_archive *a, enum dlq_import_table t)
{
	return dlq_pg_import_count(a->pg, t);
}

bool
dlq_archive_shared(const struct dlq_archive *a)
{
	return a->pg != NULL;
}

/* An SQLite archive has one worker (its file lock): it leads, and its
 * pending alerts live in its memory. */
int
dlq_archive_lease(struct dlq_archive *a, const char *replica, int64_t ttl_ms,
    char *holder, size_t n)
{
	if (a->pg == NULL)
		return 1;
	return dlq_pg_lease(a->pg, replica, ttl_ms, holder, n);
}

void
dlq_archive_lease_release(struct dlq_archive *a, const char *replica)
{
	if (a->pg != NULL)
		dlq_pg_lease_release(a->pg, replica);
}

int
dlq_archive_alerts_stage(struct dlq_archive *a, const char *const *targets,
    size_t n, const struct dlq_digest *batch)
{
	if (a->pg == NULL)
		return 0;
	return dlq_pg_alerts_stage(a->pg, targets, n, batch);
}

int64_t
dlq_archive_alerts_take(struct dlq_archive *a, const char *target,
    struct dlq_digest *out)
{
	if (a->pg == NULL)
		return 0;
	return dlq_pg_alerts_take(a->pg, target, out);
}

int
dlq_archive_alerts_done(struct dlq_archive *a, const char *target)
{
	if (a->pg == NULL)
		return 0;
	return dlq_pg_alerts_done(a->pg, target);
}

int
dlq_archive_signatures(struct dlq_archive *a, int max, void (*each)(void *ctx,
    const char *signature), void *ctx)
{
	if (a->pg != NULL)
		return dlq_pg_signatures(a->pg, max, each, ctx);
	return dlq_sqlite_signatures(a->sqlite, max, each, ctx);
}

int
dlq_cases_list(struct dlq_archive *a, const struct dlq_list_filter *f,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_list(a->pg, f, out);
	return dlq_sqlite_cases_list(a->sqlite, f, out);
}

int
dlq_cases_show(struct dlq_archive *a, int64_t id, bool payload,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_show(a->pg, id, payload, out);
	return dlq_sqlite_cases_show(a->sqlite, id, payload, out);
}

int
dlq_cases_stats(struct dlq_archive *a, int64_t now_ms, int64_t owner_sla_ms,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_stats(a->pg, now_ms, owner_sla_ms, out);
	return dlq_sqlite_cases_stats(a->sqlite, now_ms, owner_sla_ms, out);
}

int
dlq_cases_version(struct dlq_archive *a, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_version(a->pg, out);
	return dlq_sqlite_cases_version(a->sqlite, out);
}

int
dlq_cases_traffic(struct dlq_archive *a, int64_t since_ms, int64_t limit,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_traffic(a->pg, since_ms, limit, out);
	return dlq_sqlite_cases_traffic(a->sqlite, since_ms, limit, out);
}

int
dlq_cases_groups(struct dlq_archive *a, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_groups(a->pg, queue, class, since_ms,
		    limit, out);
	return dlq_sqlite_cases_groups(a->sqlite, queue, class, since_ms,
	    limit, out);
}

int
dlq_cases_assign(struct dlq_archive *a, const int64_t *ids, size_t n,
    const char *owner, const char *decision, const char *evidence,
    int64_t escalate_at_ms, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_assign(a->pg, ids, n, owner, decision,
		    evidence, escalate_at_ms, actor, now_ms, out);
	return dlq_sqlite_cases_assign(a->sqlite, ids, n, owner, decision,
	    evidence, escalate_at_ms, actor, now_ms, out);
}

int
dlq_cases_drop(struct dlq_archive *a, const int64_t *ids, size_t n,
    const char *reason, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_drop(a->pg, ids, n, reason, actor, now_ms,
		    out);
	return dlq_sqlite_cases_drop(a->sqlite, ids, n, reason, actor, now_ms,
	    out);
}

int
dlq_cases_reopen(struct dlq_archive *a, const int64_t *ids, size_t n,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_reopen(a->pg, ids, n, out);
	return dlq_sqlite_cases_reopen(a->sqlite, ids, n, out);
}

int
dlq_cases_purgeable(struct dlq_archive *a, int64_t cutoff_ms,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_purgeable(a->pg, cutoff_ms, out);
	return dlq_sqlite_cases_purgeable(a->sqlite, cutoff_ms, out);
}

int
dlq_cases_purge(struct dlq_archive *a, int64_t cutoff_ms, int64_t now_ms,
    dlq_purge_go_on go_on, void *arg, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_purge(a->pg, cutoff_ms, now_ms, go_on, arg,
		    out);
	return dlq_sqlite_cases_purge(a->sqlite, cutoff_ms, now_ms, go_on, arg,
	    out);
}

int
dlq_cases_returns(struct dlq_archive *a, const char *ids_json,
    int64_t since_ms, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_returns(a->pg, ids_json, since_ms, out);
	return dlq_sqlite_cases_returns(a->sqlite, ids_json, since_ms, out);
}

int
dlq_cases_redrive_status(struct dlq_archive *a, const char *queues_json,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_redrive_status(a->pg, queues_json, out);
	return dlq_sqlite_cases_redrive_status(a->sqlite, queues_json, out);
}

int
dlq_cases_redrive_resume(struct dlq_archive *a, const char *queue,
    const char *reason, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_redrive_resume(a->pg, queue, reason, actor,
		    now_ms, out);
	return dlq_sqlite_cases_redrive_resume(a->sqlite, queue, reason, actor,
	    now_ms, out);
}

int
dlq_cases_audit_add(struct dlq_archive *a, int64_t now_ms, const char *actor,
    long uid, const char *command, const char *args_json, const char *result)
{
	if (a->pg != NULL)
		return dlq_pg_cases_audit_add(a->pg, now_ms, actor, uid,
		    command, args_json, result);
	return dlq_sqlite_cases_audit_add(a->sqlite, now_ms, actor, uid,
	    command, args_json, result);
}

int
dlq_cases_audit(struct dlq_archive *a, const struct dlq_audit_filter *f,
    struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_audit(a->pg, f, out);
	return dlq_sqlite_cases_audit(a->sqlite, f, out);
}

int
dlq_cases_audit_expire(struct dlq_archive *a, int64_t cutoff_ms,
    long long *deleted, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_cases_audit_expire(a->pg, cutoff_ms, deleted,
		    out);
	return dlq_sqlite_cases_audit_expire(a->sqlite, cutoff_ms, deleted,
	    out);
}

int
dlq_causes_list(struct dlq_archive *a, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, size_t max_groups, struct dlq_buf *out)
{
	if (a->pg != NULL)
		return dlq_pg_causes_list(a->pg, queue, class, since_ms, limit,
		    max_groups, out);
	return dlq_sqlite_causes_list(a->sqlite, queue, class, since_ms, limit,
	    max_groups, out);
}

int64_t
dlq_alert_backlog(struct dlq_archive *a, int64_t since_ms, int max_groups,
    struct dlq_digest *out)
{
	if (a->pg != NULL)
		return dlq_pg_alert_backlog(a->pg, since_ms, max_groups, out);
	return dlq_sqlite_alert_backlog(a->sqlite, since_ms, max_groups, out);
}

int
dlq_classrefresh_run(struct dlq_archive *a, const char *path,
    const struct dlq_classifier *k)
{
	if (a->pg != NULL)
		return dlq_pg_classrefresh_run(a->pg, path, k);
	return dlq_sqlite_classrefresh_run(a->sqlite, path, k);
}

int
dlq_replay_plan(struct dlq_archive *a, const struct dlq_config *c,
    const cJSON *req, struct dlq_buf *out, char *why, size_t whylen)
{
	if (a->pg != NULL)
		return dlq_pg_replay_plan(a->pg, c, req, out, why, whylen);
	return dlq_sqlite_replay_plan(a->sqlite, c, req, out, why, whylen);
}

int
dlq_replay_claim(struct dlq_archive *a, const struct dlq_config *c,
    const cJSON *req, const char *actor, struct dlq_buf *out, char *why,
    size_t whylen)
{
	if (a->pg != NULL)
		return dlq_pg_replay_claim(a->pg, c, req, actor, out, why,
		    whylen);
	return dlq_sqlite_replay_claim(a->sqlite, c, req, actor, out, why,
	    whylen);
}

int
dlq_replay_finish(struct dlq_archive *a, const cJSON *req, const char *actor,
    struct dlq_buf *out, char *why, size_t whylen)
{
	if (a->pg != NULL)
		return dlq_pg_replay_finish(a->pg, req, actor, out, why,
		    whylen);
	return dlq_sqlite_replay_finish(a->sqlite, req, actor, out, why,
	    whylen);
}

int64_t
dlq_archive_unresolved(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_unresolved(a->pg);
	return dlq_sqlite_unresolved(a->sqlite);
}

int64_t
dlq_archive_oldest_unresolved(struct dlq_archive *a, int64_t now_ms)
{
	if (a->pg != NULL)
		return dlq_pg_oldest_unresolved(a->pg, now_ms);
	return dlq_sqlite_oldest_unresolved(a->sqlite, now_ms);
}

int
dlq_archive_escalations(struct dlq_archive *a, int64_t now_ms,
    int64_t owner_sla_ms, int64_t *swept_ms, void (*each)(void *arg,
    const struct dlq_escalation *), void *arg)
{
	if (a->pg != NULL)
		return dlq_pg_escalations(a->pg, now_ms, owner_sla_ms, swept_ms,
		    each, arg);
	return dlq_sqlite_escalations(a->sqlite, now_ms, owner_sla_ms,
	    swept_ms, each, arg);
}

void
dlq_archive_metrics(struct dlq_archive *a, int64_t now_ms,
    int64_t owner_sla_ms, struct dlq_buf *out)
{
	if (a->pg != NULL)
		dlq_pg_metrics(a->pg, now_ms, owner_sla_ms, out);
	else
		dlq_sqlite_metrics(a->sqlite, now_ms, owner_sla_ms, out);
}

bool
dlq_archive_writable(struct dlq_archive *a)
{
	if (a->pg != NULL)
		return dlq_pg_writable(a->pg);
	return dlq_sqlite_writable(a->sqlite);
}

void
dlq_archive_busy_timeout(struct dlq_archive *a, int ms)
{
	if (a->pg != NULL)
		dlq_pg_busy_timeout(a->pg, ms);
	else
		dlq_sqlite_busy_timeout(a->sqlite, ms);
}

bool
dlq_redrive_circuit_open(struct dlq_archive *a, const char *queue)
{
	if (a->pg != NULL)
		return dlq_pg_redrive_circuit_open(a->pg, queue);
	return dlq_sqlite_redrive_circuit_open(a->sqlite, queue);
}

int64_t
dlq_redrive_returned(struct dlq_archive *a, const char *queue,
    int64_t since_ms, int64_t until_ms)
{
	if (a->pg != NULL)
		return dlq_pg_redrive_returned(a->pg, queue, since_ms,
		    until_ms);
	return dlq_sqlite_redrive_returned(a->sqlite, queue, since_ms,
	    until_ms);
}

void
dlq_redrive_trip(struct dlq_archive *a, const char *queue, int64_t now_ms,
    int64_t redriven, int64_t returned)
{
	if (a->pg != NULL)
		dlq_pg_redrive_trip(a->pg, queue, now_ms, redriven, returned);
	else
		dlq_sqlite_redrive_trip(a->sqlite, queue, now_ms, redriven,
		    returned);
}

void
dlq_redrive_give_up(struct dlq_archive *a, const char *queue, int64_t now_ms,
    int64_t max_cycles, const char *classes_json, dlq_redrive_left_fn each,
    void *arg)
{
	if (a->pg != NULL)
		dlq_pg_redrive_give_up(a->pg, queue, now_ms, max_cycles,
		    classes_json, each, arg);
	else
		dlq_sqlite_redrive_give_up(a->sqlite, queue, now_ms,
		    max_cycles, classes_json, each, arg);
}

void
dlq_redrive_leave(struct dlq_archive *a, int64_t id, int64_t now_ms,
    const char *note, dlq_redrive_left_fn each, void *arg)
{
	if (a->pg != NULL)
		dlq_pg_redrive_leave(a->pg, id, now_ms, note, each, arg);
	else
		dlq_sqlite_redrive_leave(a->sqlite, id, now_ms, note, each,
		    arg);
}

int
dlq_redrive_candidates(struct dlq_archive *a, const char *queue,
    int64_t born_before_ms, int64_t max_cycles, const char *classes_json,
    int64_t limit, void (*each)(void *arg, int64_t id), void *arg)
{
	if (a->pg != NULL)
		return dlq_pg_redrive_candidates(a->pg, queue, born_before_ms,
		    max_cycles, classes_json, limit, each, arg);
	return dlq_sqlite_redrive_candidates(a->sqlite, queue, born_before_ms,
	    max_cycles, classes_json, limit, each, arg);
}

int
dlq_sigrefresh_run(struct dlq_archive *a, const char *path)
{
	if (a->pg != NULL)
		return dlq_pg_sigrefresh_run(a->pg, path);
	return dlq_sqlite_sigrefresh_run(a->sqlite, path);
}
