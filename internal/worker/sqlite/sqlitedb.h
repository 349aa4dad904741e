/* sqlitedb.h - the SQLite backend's operations, as internal/worker/
 * backends.c calls them: each is the operation of the same name in the
 * storage seam (archive.h, cases.h, causes.h, alertbacklog.h,
 * classrefresh.h, replaysrv.h, housekeep.h, gauges.h, redrivedb.h,
 * sigrefresh.h), documented there, on the backend's own handle. No
 * SQLite type appears here: the backend's internals are in sqlite.h. */
#ifndef DLQ_SQLITEDB_H
#define DLQ_SQLITEDB_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alertbacklog.h"
#include "archive.h"
#include "cases.h"
#include "causes.h"
#include "classrefresh.h"
#include "gauges.h"
#include "housekeep.h"
#include "import.h"
#include "redrivedb.h"
#include "replaysrv.h"
#include "sigrefresh.h"

struct dlq_sqlite;
struct sqlite3;

/* The SQLite connection of a handle opened on SQLite, NULL on another
 * backend: for the tests that look into the file (backends.c). */
struct sqlite3 *dlq_archive_db(struct dlq_archive *);
/* The connection of a SQLite handle. */
struct sqlite3 *dlq_sqlite_db(struct dlq_sqlite *);

int	dlq_sqlite_claim(const char *path, int *fd);
struct dlq_sqlite *dlq_sqlite_open(const struct dlq_config *);
struct dlq_export *dlq_sqlite_export_open(const char *path, char *err,
	    size_t n);
void	dlq_sqlite_export_close(struct dlq_export *);
int	dlq_sqlite_export_rows(struct dlq_export *, enum dlq_import_table,
	    int64_t after, struct dlq_buf *json, int64_t *last);
int64_t	dlq_sqlite_export_count(struct dlq_export *, enum dlq_import_table);
const char *dlq_sqlite_export_errmsg(const struct dlq_export *);
void	dlq_sqlite_close(struct dlq_sqlite *);
int	dlq_sqlite_cache(struct dlq_sqlite *, int64_t kib);
void	dlq_sqlite_release_memory(struct dlq_sqlite *);
int	dlq_sqlite_begin(struct dlq_sqlite *);
int64_t	dlq_sqlite_put(struct dlq_sqlite *, const struct dlq_record *,
	    bool *duplicate);
int	dlq_sqlite_commit(struct dlq_sqlite *);
int	dlq_sqlite_commit_hold(struct dlq_sqlite *);
void	dlq_sqlite_rollback(struct dlq_sqlite *);
bool	dlq_sqlite_moved(struct dlq_sqlite *);
const char *dlq_sqlite_errmsg(const struct dlq_sqlite *);
int	dlq_sqlite_meta_get(struct dlq_sqlite *, const char *key,
	    int64_t *value);
int	dlq_sqlite_meta_set(struct dlq_sqlite *, const char *key,
	    int64_t value);
void	dlq_sqlite_stop_waits(struct dlq_sqlite *, const atomic_bool *stop);
int	dlq_sqlite_probe(struct dlq_sqlite *, size_t bytes);
int	dlq_sqlite_signatures(struct dlq_sqlite *, int max,
	    void (*each)(void *ctx, const char *signature), void *ctx);
int	dlq_sqlite_cases_list(struct dlq_sqlite *,
	    const struct dlq_list_filter *, struct dlq_buf *out);
int	dlq_sqlite_cases_version(struct dlq_sqlite *, struct dlq_buf *);
int	dlq_sqlite_cases_show(struct dlq_sqlite *, int64_t id, bool payload,
	    struct dlq_buf *out);
int	dlq_sqlite_cases_stats(struct dlq_sqlite *, int64_t now_ms,
	    int64_t owner_sla_ms, struct dlq_buf *out);
int	dlq_sqlite_cases_traffic(struct dlq_sqlite *, int64_t since_ms,
	    int64_t limit, struct dlq_buf *out);
int	dlq_sqlite_cases_groups(struct dlq_sqlite *, const char *queue,
	    const char *class, int64_t since_ms, int64_t limit,
	    struct dlq_buf *out);
int	dlq_sqlite_cases_assign(struct dlq_sqlite *, const int64_t *ids,
	    size_t n, const char *owner, const char *decision,
	    const char *evidence, int64_t escalate_at_ms, const char *actor,
	    int64_t now_ms, struct dlq_buf *out);
int	dlq_sqlite_cases_drop(struct dlq_sqlite *, const int64_t *ids,
	    size_t n, const char *reason, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
int	dlq_sqlite_cases_reopen(struct dlq_sqlite *, const int64_t *ids,
	    size_t n, struct dlq_buf *out);
int	dlq_sqlite_cases_purgeable(struct dlq_sqlite *, int64_t cutoff_ms,
	    struct dlq_buf *out);
int	dlq_sqlite_cases_purge(struct dlq_sqlite *, int64_t cutoff_ms,
	    int64_t now_ms, dlq_purge_go_on go_on, void *arg,
	    struct dlq_buf *out);
int	dlq_sqlite_cases_returns(struct dlq_sqlite *, const char *ids_json,
	    int64_t since_ms, struct dlq_buf *out);
int	dlq_sqlite_cases_redrive_status(struct dlq_sqlite *,
	    const char *queues_json, struct dlq_buf *out);
int	dlq_sqlite_cases_redrive_resume(struct dlq_sqlite *,
	    const char *queue, const char *reason, const char *actor,
	    int64_t now_ms, struct dlq_buf *out);
int	dlq_sqlite_cases_audit_add(struct dlq_sqlite *, int64_t now_ms,
	    const char *actor, long uid, const char *command,
	    const char *args_json, const char *result);
int	dlq_sqlite_cases_audit(struct dlq_sqlite *,
	    const struct dlq_audit_filter *, struct dlq_buf *out);
int	dlq_sqlite_cases_audit_expire(struct dlq_sqlite *,
	    int64_t cutoff_ms, long long *deleted, struct dlq_buf *out);
int	dlq_sqlite_causes_list(struct dlq_sqlite *, const char *queue,
	    const char *class, int64_t since_ms, int64_t limit,
	    size_t max_groups, struct dlq_buf *out);
int64_t	dlq_sqlite_alert_backlog(struct dlq_sqlite *, int64_t since_ms,
	    int max_groups, struct dlq_digest *out);
int	dlq_sqlite_classrefresh_run(struct dlq_sqlite *, const char *path,
	    const struct dlq_classifier *k);
int	dlq_sqlite_replay_plan(struct dlq_sqlite *,
	    const struct dlq_config *, const cJSON *req,
	    struct dlq_buf *out, char *why, size_t whylen);
int	dlq_sqlite_replay_claim(struct dlq_sqlite *,
	    const struct dlq_config *, const cJSON *req, const char *actor,
	    struct dlq_buf *out, char *why, size_t whylen);
int	dlq_sqlite_replay_finish(struct dlq_sqlite *, const cJSON *req,
	    const char *actor, struct dlq_buf *out, char *why,
	    size_t whylen);
int64_t	dlq_sqlite_unresolved(struct dlq_sqlite *);
int64_t	dlq_sqlite_oldest_unresolved(struct dlq_sqlite *, int64_t now_ms);
int	dlq_sqlite_escalations(struct dlq_sqlite *, int64_t now_ms,
	    int64_t owner_sla_ms, int64_t *swept_ms, void (*each)(void *arg,
	    const struct dlq_escalation *), void *arg);
void	dlq_sqlite_metrics(struct dlq_sqlite *, int64_t now_ms,
	    int64_t owner_sla_ms, struct dlq_buf *out);
bool	dlq_sqlite_writable(struct dlq_sqlite *);
void	dlq_sqlite_busy_timeout(struct dlq_sqlite *, int ms);
bool	dlq_sqlite_redrive_circuit_open(struct dlq_sqlite *,
	    const char *queue);
int64_t	dlq_sqlite_redrive_returned(struct dlq_sqlite *, const char *queue,
	    int64_t since_ms, int64_t until_ms);
void	dlq_sqlite_redrive_trip(struct dlq_sqlite *, const char *queue,
	    int64_t now_ms, int64_t redriven, int64_t returned);
void	dlq_sqlite_redrive_give_up(struct dlq_sqlite *, const char *queue,
	    int64_t now_ms, int64_t max_cycles, const char *classes_json,
	    dlq_redrive_left_fn each, void *arg);
void	dlq_sqlite_redrive_leave(struct dlq_sqlite *, int64_t id,
	    int64_t now_ms, const char *note, dlq_redrive_left_fn each,
	    void *arg);
int	dlq_sqlite_redrive_candidates(struct dlq_sqlite *,
	    const char *queue, int64_t born_before_ms, int64_t max_cycles,
	    const char *classes_json, int64_t limit, void (*each)(void *arg,
	    int64_t id), void *arg);
int	dlq_sqlite_sigrefresh_run(struct dlq_sqlite *, const char *path);

#endif
