/* pgdb.h - the PostgreSQL backend's operations, as internal/worker/
 * backends.c calls them: each is the operation of the same name in the
 * storage seam (archive.h and the headers beside it), documented there,
 * on the backend's own handle. No libpq type appears here: the backend's
 * internals are in pg.h. */
#ifndef DLQ_PGDB_H
#define DLQ_PGDB_H

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alertbacklog.h"
#include "archive.h"
#include "buf.h"
#include "cases.h"
#include "causes.h"
#include "classrefresh.h"
#include "gauges.h"
#include "housekeep.h"
#include "import.h"
#include "redrivedb.h"
#include "replaysrv.h"
#include "replicas.h"
#include "sigrefresh.h"

struct dlq_pg;

/* The server and database of a connection string without its password,
 * "postgresql://user@host:port/dbname" (parts not given left out), into
 * out[n]: what logs and errors name (conn.c). */
void	dlq_pg_target(const char *conninfo, char *out, size_t n);

/* For --check-config: connects to archive.url and says what it found
 * (the server without password, the schema version, or that the
 * database is empty yet) in `out`. 0, or -1 with the reason in `out`. */
int	dlq_pg_describe(const struct dlq_config *, struct dlq_buf *out);

struct dlq_pg *dlq_pg_open(const struct dlq_config *);
void	dlq_pg_close(struct dlq_pg *);
int	dlq_pg_cache(struct dlq_pg *, int64_t kib);
void	dlq_pg_release_memory(struct dlq_pg *);
int	dlq_pg_begin(struct dlq_pg *);
int64_t	dlq_pg_put(struct dlq_pg *, const struct dlq_record *,
	    bool *duplicate);
int	dlq_pg_commit(struct dlq_pg *);
int	dlq_pg_commit_hold(struct dlq_pg *);
void	dlq_pg_rollback(struct dlq_pg *);
bool	dlq_pg_moved(struct dlq_pg *);
const char *dlq_pg_errmsg(const struct dlq_pg *);
int	dlq_pg_meta_get(struct dlq_pg *, const char *key, int64_t *value);
int	dlq_pg_meta_set(struct dlq_pg *, const char *key, int64_t value);
void	dlq_pg_stop_waits(struct dlq_pg *, const atomic_bool *stop);
int	dlq_pg_probe(struct dlq_pg *, size_t bytes);
int	dlq_pg_lease(struct dlq_pg *, const char *replica, int64_t ttl_ms,
	    char *holder, size_t n);
void	dlq_pg_lease_release(struct dlq_pg *, const char *replica);
int	dlq_pg_alerts_stage(struct dlq_pg *, const char *const *targets,
	    size_t n, const struct dlq_digest *batch);
int64_t	dlq_pg_alerts_take(struct dlq_pg *, const char *target,
	    struct dlq_digest *out);
int	dlq_pg_alerts_done(struct dlq_pg *, const char *target);
int	dlq_pg_import_begin(struct dlq_pg *, char *err, size_t n);
int64_t	dlq_pg_import_after(struct dlq_pg *, enum dlq_import_table);
int	dlq_pg_import_rows(struct dlq_pg *, enum dlq_import_table,
	    const char *json);
int	dlq_pg_import_finish(struct dlq_pg *);
int64_t	dlq_pg_import_count(struct dlq_pg *, enum dlq_import_table);
int	dlq_pg_signatures(struct dlq_pg *, int max, void (*each)(void *ctx,
	    const char *signature), void *ctx);
int	dlq_pg_cases_list(struct dlq_pg *, const struct dlq_list_filter *,
	    struct dlq_buf *out);
int	dlq_pg_cases_version(struct dlq_pg *, struct dlq_buf *);
int	dlq_pg_cases_show(struct dlq_pg *, int64_t id, bool payload,
	    struct dlq_buf *out);
int	dlq_pg_cases_stats(struct dlq_pg *, int64_t now_ms,
	    int64_t owner_sla_ms, struct dlq_buf *out);
int	dlq_pg_cases_traffic(struct dlq_pg *, int64_t since_ms,
	    int64_t limit, struct dlq_buf *out);
int	dlq_pg_cases_groups(struct dlq_pg *, const char *queue,
	    const char *class, int64_t since_ms, int64_t limit,
	    struct dlq_buf *out);
int	dlq_pg_cases_assign(struct dlq_pg *, const int64_t *ids, size_t n,
	    const char *owner, const char *decision, const char *evidence,
	    int64_t escalate_at_ms, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
int	dlq_pg_cases_drop(struct dlq_pg *, const int64_t *ids, size_t n,
	    const char *reason, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
int	dlq_pg_cases_reopen(struct dlq_pg *, const int64_t *ids, size_t n,
	    struct dlq_buf *out);
int	dlq_pg_cases_purgeable(struct dlq_pg *, int64_t cutoff_ms,
	    struct dlq_buf *out);
int	dlq_pg_cases_purge(struct dlq_pg *, int64_t cutoff_ms,
	    int64_t now_ms, dlq_purge_go_on go_on, void *arg,
	    struct dlq_buf *out);
int	dlq_pg_cases_returns(struct dlq_pg *, const char *ids_json,
	    int64_t since_ms, struct dlq_buf *out);
int	dlq_pg_cases_redrive_status(struct dlq_pg *,
	    const char *queues_json, struct dlq_buf *out);
int	dlq_pg_cases_redrive_resume(struct dlq_pg *, const char *queue,
	    const char *reason, const char *actor, int64_t now_ms,
	    struct dlq_buf *out);
int	dlq_pg_cases_audit_add(struct dlq_pg *, int64_t now_ms,
	    const char *actor, long uid, const char *command,
	    const char *args_json, const char *result);
int	dlq_pg_cases_audit(struct dlq_pg *, const struct dlq_audit_filter *,
	    struct dlq_buf *out);
int	dlq_pg_cases_audit_expire(struct dlq_pg *, int64_t cutoff_ms,
	    long long *deleted, struct dlq_buf *out);
int	dlq_pg_causes_list(struct dlq_pg *, const char *queue,
	    const char *class, int64_t since_ms, int64_t limit,
	    size_t max_groups, struct dlq_buf *out);
int64_t	dlq_pg_alert_backlog(struct dlq_pg *, int64_t since_ms,
	    int max_groups, struct dlq_digest *out);
int	dlq_pg_classrefresh_run(struct dlq_pg *, const char *path,
	    const struct dlq_classifier *k);
int	dlq_pg_replay_plan(struct dlq_pg *, const struct dlq_config *,
	    const cJSON *req, struct dlq_buf *out, char *why,
	    size_t whylen);
int	dlq_pg_replay_claim(struct dlq_pg *, const struct dlq_config *,
	    const cJSON *req, const char *actor, struct dlq_buf *out,
	    char *why, size_t whylen);
int	dlq_pg_replay_finish(struct dlq_pg *, const cJSON *req,
	    const char *actor, struct dlq_buf *out, char *why,
	    size_t whylen);
int64_t	dlq_pg_unresolved(struct dlq_pg *);
int64_t	dlq_pg_oldest_unresolved(struct dlq_pg *, int64_t now_ms);
int	dlq_pg_escalations(struct dlq_pg *, int64_t now_ms,
	    int64_t owner_sla_ms, int64_t *swept_ms, void (*each)(void *arg,
	    const struct dlq_escalation *), void *arg);
void	dlq_pg_metrics(struct dlq_pg *, int64_t now_ms,
	    int64_t owner_sla_ms, struct dlq_buf *out);
bool	dlq_pg_writable(struct dlq_pg *);
void	dlq_pg_busy_timeout(struct dlq_pg *, int ms);
bool	dlq_pg_redrive_circuit_open(struct dlq_pg *, const char *queue);
int64_t	dlq_pg_redrive_returned(struct dlq_pg *, const char *queue,
	    int64_t since_ms, int64_t until_ms);
void	dlq_pg_redrive_trip(struct dlq_pg *, const char *queue,
	    int64_t now_ms, int64_t redriven, int64_t returned);
void	dlq_pg_redrive_give_up(struct dlq_pg *, const char *queue,
	    int64_t now_ms, int64_t max_cycles, const char *classes_json,
	    dlq_redrive_left_fn each, void *arg);
void	dlq_pg_redrive_leave(struct dlq_pg *, int64_t id, int64_t now_ms,
	    const char *note, dlq_redrive_left_fn each, void *arg);
int	dlq_pg_redrive_candidates(struct dlq_pg *, const char *queue,
	    int64_t born_before_ms, int64_t max_cycles,
	    const char *classes_json, int64_t limit, void (*each)(void *arg,
	    int64_t id), void *arg);
int	dlq_pg_sigrefresh_run(struct dlq_pg *, const char *path);

#endif
