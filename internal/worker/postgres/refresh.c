/* refresh.c - the records' classes and failure signatures computed again
 * on a PostgreSQL archive, as on SQLite (classrefresh.h, sigrefresh.h):
 * the signatures of every record when a release reads error texts
 * better (archive_meta's signature_version), the classes and hints of
 * the open and assigned records when the classification rules changed
 * (classify_rules), each move of class audited.
 *
 * Replicas that start at once: the first takes an advisory lock and
 * refreshes in one transaction; the others wait for it, then find the
 * version or the rules noted and read nothing. */
#include "classrefresh.h"
#include "sigrefresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amqp.h"
#include "cases.h"
#include "classify.h"
#include "log.h"
#include "pg.h"
#include "proto.h"
#include "signature.h"

/* pg_advisory_xact_lock's key for refreshes: "dlqr" */
#define REFRESH_LOCK	"1684828530"
#define VERSION_KEY	"signature_version"
#define RULES_KEY	"classify_rules"
#define CHUNK		"1000"
#define AUDIT_REASON	"the classification rules changed since it was " \
	"archived"

struct refresh {
	struct dlq_pg			*pg;
	const struct dlq_classifier	*k;	/* NULL: signatures */
	struct dlq_buf			 norm;
	int64_t				 from;	/* version noted before */
	int64_t				 records, changed, hints;
};

/* The signature a record of these texts gets now, into sig. */
static void
signature_of(struct refresh *r, const char *queue, const char *reason,
    const char *class, const char *error, char sig[DLQ_SIGNATURE_ID_LEN + 1])
{
	dlq_buf_reset(&r->norm);
	dlq_signature_normalize(error, strlen(error), &r->norm);
	dlq_signature_id(dlq_signature_hash(queue, reason, class,
	    r->norm.data != NULL ? r->norm.data : ""), sig);
}

static int
set_signature(struct refresh *r, const char *id, const char *sig)
{
	const char *values[2] = { sig, id };
	PGresult *res = dlq_pg_query(r->pg, "refresh", "UPDATE dead_letters"
	    " SET signature = $1 WHERE id = $2", 2, values, NULL, NULL,
	    r->pg->wait_ms);

	PQclear(res);
	return res != NULL ? 0 : -1;
}

/* The records of a chunk whose class moved from one to another: one
 * audit entry for them, by their ids (so that `show` lists it in each
 * one's history). Classes are few: so are the moves of a chunk. */
#define MOVES_MAX	64

struct move {
	char		 from[32], to[32];
	struct dlq_buf	 ids;
};

static struct move *
move_of(struct move *moves, int *n, const char *from, const char *to)
{
	int i;

	for (i = 0; i < *n; i++)
		if (strcmp(moves[i].from, from) == 0 &&
		    strcmp(moves[i].to, to) == 0)
			return &moves[i];
	if (*n == MOVES_MAX)
		return NULL;
	snprintf(moves[*n].from, sizeof(moves[0].from), "%s", from);
	snprintf(moves[*n].to, sizeof(moves[0].to), "%s", to);
	dlq_buf_init(&moves[*n].ids);
	return &moves[(*n)++];
}

/* Audits the chunk's moves and forgets them; 0 / -1. */
static int
audit_moves(struct refresh *r, struct move *moves, int *n)
{
	struct dlq_buf args, result;
	int i, rc = 0;

	for (i = 0; i < *n; i++) {
		dlq_buf_init(&args);
		dlq_buf_init(&result);
		dlq_buf_adds(&args, "{\"ids\":[");
		dlq_buf_add(&args, moves[i].ids.data, moves[i].ids.len);
		dlq_buf_adds(&args, "],\"from\":");
		dlq_buf_json_cstr(&args, moves[i].from);
		dlq_buf_adds(&args, ",\"to\":");
		dlq_buf_json_cstr(&args, moves[i].to);
		dlq_buf_adds(&args, ",\"reason\":\"" AUDIT_REASON "\"}");
		dlq_buf_printf(&result, "class %s -> %s", moves[i].from,
		    moves[i].to);
		if (rc == 0 && (args.oom || result.oom ||
		    dlq_pg_cases_audit_add(r->pg, dlq_wall_ms(),
		    DLQ_REDRIVE_ACTOR, (long)getuid(),
		    DLQ_RECLASSIFY_AUDIT_COMMAND, args.data, result.data) == -1))
			rc = -1;
		dlq_buf_release(&args);
		dlq_buf_release(&result);
		dlq_buf_release(&moves[i].ids);
	}
	*n = 0;
	return rc;
}

/* A record of the class refresh: its class and hint by the rules of
 * now, its signature with a new class; a move noted in `moves`. */
static int
reclassify(struct refresh *r, PGresult *res, int i, struct move *moves,
    int *n_moves)
{
	struct dlq_classification cl;
	char sig[DLQ_SIGNATURE_ID_LEN + 1];
	const char *id = PQgetvalue(res, i, 0), *queue = PQgetvalue(res, i, 1);
	const char *reason = PQgetvalue(res, i, 2);
	const char *error = PQgetvalue(res, i, 3);
	const char *class = PQgetvalue(res, i, 4), *values[4];
	struct move *m;
	bool moved;
	PGresult *w;

	dlq_classify(r->k, queue, reason, error, &cl);
	moved = strcmp(cl.class, class) != 0;
	if (!moved && strcmp(cl.hint, PQgetvalue(res, i, 5)) == 0)
		return 0;
	if (moved)
		signature_of(r, queue, reason, cl.class, error, sig);
	values[0] = cl.class;
	values[1] = moved ? sig : NULL;
	values[2] = cl.hint;
	values[3] = id;
	w = dlq_pg_query(r->pg, "refresh", "UPDATE dead_letters SET class ="
	    " $1, signature = coalesce($2, signature), hint = $3, hint_id ="
	    " NULL WHERE id = $4", 4, values, NULL, NULL, r->pg->wait_ms);
	PQclear(w);
	if (w == NULL)
		return -1;
	if (!moved) {
		r->hints++;
		return 0;
	}
	r->changed++;
	if ((m = move_of(moves, n_moves, class, cl.class)) == NULL)
		return -1;
	dlq_buf_printf(&m->ids, "%s%s", m->ids.len ? "," : "", id);
	return 0;
}

/* Every record concerned, a chunk at a time, in id order. */
static int
walk(struct refresh *r)
{
	char after[24] = "0";
	const char *values[1] = { after };
	char sig[DLQ_SIGNATURE_ID_LEN + 1];
	struct move moves[MOVES_MAX];
	PGresult *res;
	int i, n, n_moves = 0;

	do {
		res = dlq_pg_query(r->pg, "refresh", r->k != NULL ?
		    "SELECT id, queue, reason, error, class, coalesce(hint, '')"
		    " FROM dead_letters WHERE id > $1 AND status IN ('open',"
		    " 'assigned') ORDER BY id LIMIT " CHUNK :
		    "SELECT id, queue, reason, class, coalesce(error, ''),"
		    " signature FROM dead_letters WHERE id > $1 ORDER BY id"
		    " LIMIT " CHUNK, 1, values, NULL, NULL, r->pg->wait_ms);
		if (res == NULL)
			return -1;
		n = PQntuples(res);
		for (i = 0; i < n; i++) {
			r->records++;
			if (r->k != NULL) {
				if (reclassify(r, res, i, moves, &n_moves) == -1)
					goto fail;
				continue;
			}
			signature_of(r, PQgetvalue(res, i, 1),
			    PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
			    PQgetvalue(res, i, 4), sig);
			if (strcmp(sig, PQgetvalue(res, i, 5)) == 0)
				continue;
			if (set_signature(r, PQgetvalue(res, i, 0), sig) == -1)
				goto fail;
			r->changed++;
		}
		if (n > 0)
			snprintf(after, sizeof(after), "%s",
			    PQgetvalue(res, n - 1, 0));
		PQclear(res);
		if (audit_moves(r, moves, &n_moves) == -1)
			return -1;
	} while (n > 0);
	return 0;
fail:
	PQclear(res);
	(void)audit_moves(r, moves, &n_moves);	/* frees; rolled back */
	return -1;
}

/* In one transaction under the refresh lock: what `key` notes read
 * again, and when it is not `want` (or, for the version, below it),
 * the walk, then `want` noted. */
static int
run(struct refresh *r, const char *key, int64_t want)
{
	int wait = r->pg->wait_ms;
	int64_t noted = 0;
	int rc;

	if (dlq_pg_exec(r->pg, "refresh", "BEGIN") == -1)
		return -1;
	r->pg->wait_ms = DLQ_PG_MIGRATE_WAIT_MS;	/* another replica's */
	rc = dlq_pg_exec(r->pg, "refresh", "SELECT pg_advisory_xact_lock("
	    REFRESH_LOCK ")");
	r->pg->wait_ms = wait;
	if (rc == -1 || dlq_pg_meta_get(r->pg, key, &noted) == -1)
		goto fail;
	r->from = noted;
	if (r->k != NULL ? noted == want : noted >= want)
		return dlq_pg_commit_tx(r->pg);
	if (walk(r) == -1 || dlq_pg_meta_set(r->pg, key, want) == -1 ||
	    dlq_pg_commit_tx(r->pg) == -1)
		goto fail;
	return 0;
fail:
	if (r->pg->conn != NULL)
		(void)dlq_pg_exec(r->pg, "refresh", "ROLLBACK");
	r->records = 0;
	return -1;
}

int
dlq_pg_sigrefresh_run(struct dlq_pg *a, const char *path)
{
	struct refresh r = { a, NULL, { 0 }, 0, 0, 0, 0 };
	struct dlq_buf line = { 0 };
	int64_t t0 = dlq_now_ms(), noted = 0;
	int rc = 0;

	(void)path;	/* the server's database, a->target */
	if (dlq_pg_meta_get(a, VERSION_KEY, &noted) == -1)
		return -1;
	if (noted >= DLQ_SIGNATURE_VERSION)
		return 0;
	dlq_buf_init(&r.norm);
	if (run(&r, VERSION_KEY, DLQ_SIGNATURE_VERSION) == -1) {
		dlq_log(DLQ_LOG_WARN, "signatures_refresh_failed", "url",
		    a->target, "error", dlq_pg_err, NULL);
		rc = -1;
	} else if (r.records > 0 && dlq_log_begin(&line, DLQ_LOG_INFO,
	    "signatures_refreshed")) {
		dlq_log_str(&line, "url", a->target);
		dlq_log_int(&line, "from", r.from);
		dlq_log_int(&line, "to", DLQ_SIGNATURE_VERSION);
		dlq_log_int(&line, "records", r.records);
		dlq_log_int(&line, "changed", r.changed);
		dlq_log_int(&line, "ms", dlq_now_ms() - t0);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	dlq_buf_release(&r.norm);
	return rc;
}

int
dlq_pg_classrefresh_run(struct dlq_pg *a, const char *path,
    const struct dlq_classifier *k)
{
	struct refresh r = { a, k, { 0 }, 0, 0, 0, 0 };
	struct dlq_buf line = { 0 };
	int64_t t0 = dlq_now_ms(), noted = 0;
	int64_t rules = (int64_t)dlq_classify_rules_hash(k);
	int rc = 0;

	(void)path;
	if (dlq_pg_meta_get(a, RULES_KEY, &noted) == -1)
		return -1;
	if (noted == rules)
		return 0;
	dlq_buf_init(&r.norm);
	if (run(&r, RULES_KEY, rules) == -1) {
		dlq_log(DLQ_LOG_WARN, "classes_refresh_failed", "url",
		    a->target, "error", dlq_pg_err, NULL);
		rc = -1;
	} else if (r.records > 0 && dlq_log_begin(&line, DLQ_LOG_INFO,
	    "classes_refreshed")) {
		dlq_log_str(&line, "url", a->target);
		dlq_log_int(&line, "records", r.records);
		dlq_log_int(&line, "changed", r.changed);
		dlq_log_int(&line, "hints", r.hints);
		dlq_log_int(&line, "ms", dlq_now_ms() - t0);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	dlq_buf_release(&r.norm);
	return rc;
}
