/* classrefresh.c - the unresolved records' classes, given again when the
 * classification rules changed. */
#include "classrefresh.h"
#include "sqlite.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amqp.h"
#include "archive.h"
#include "buf.h"
#include "cases.h"
#include "log.h"
#include "signature.h"

#define RULES_KEY	"classify_rules"
/* records read, then changed, at a time (dlq_sqlite_walk) */
#define CHUNK		1000
#define AUDIT_REASON	"the classification rules changed since it was " \
	"archived"

struct change {
	int64_t		 id;
	char		 from[32];	/* the class it had */
	const char	*to, *hint;	/* the classifier's */
	char		 sig[DLQ_SIGNATURE_ID_LEN + 1];	/* "": unchanged */
};

struct refresh {
	struct dlq_sqlite		*archive;
	sqlite3				*db;
	const struct dlq_classifier	*k;
	int64_t				 rules;		/* k's */
	sqlite3_stmt			*read, *write, *hint_add, *hint_find;
	struct dlq_buf			 norm;
	struct change			 changes[CHUNK];
	int64_t				 records, changed, hints;
};

/* The unresolved records after archive id `after`, up to CHUNK: the ones
 * whose class or hint differs from what the rules give now go into
 * r->changes. Their number, the last id read in *last; -1 on error. */
static int
read_chunk(void *arg, int64_t after, int64_t *last)
{
	struct refresh *r = arg;
	struct dlq_classification cl;
	struct change *c;
	const char *queue, *reason, *error, *class;
	bool moved;
	int n = 0, rc;

	sqlite3_reset(r->read);
	sqlite3_bind_int64(r->read, 1, after);
	sqlite3_bind_int(r->read, 2, CHUNK);
	while ((rc = sqlite3_step(r->read)) == SQLITE_ROW) {
		*last = sqlite3_column_int64(r->read, 0);
		queue = dlq_sqlite_text(r->read, 1);
		reason = dlq_sqlite_text(r->read, 2);
		error = dlq_sqlite_text(r->read, 3);
		class = dlq_sqlite_text(r->read, 4);
		r->records++;
		dlq_classify(r->k, queue, reason, error, &cl);
		moved = strcmp(cl.class, class) != 0;
		if (!moved &&
		    strcmp(cl.hint, dlq_sqlite_text(r->read, 5)) == 0)
			continue;
		c = &r->changes[n++];
		c->id = *last;
		snprintf(c->from, sizeof(c->from), "%s", class);
		c->to = cl.class;
		c->hint = cl.hint;
		c->sig[0] = '\0';
		if (!moved)
			continue;
		/* as the consumer computes it for a new dead letter */
		dlq_buf_reset(&r->norm);
		dlq_signature_normalize(error, strlen(error), &r->norm);
		dlq_signature_id(dlq_signature_hash(queue, reason, cl.class,
		    r->norm.data != NULL ? r->norm.data : ""), c->sig);
	}
	return rc == SQLITE_DONE ? n : -1;
}

/* The id of a hint text in `hints`, added if new; 0 on error. */
static int64_t
hint_id(struct refresh *r, const char *hint)
{
	int64_t id = 0;

	sqlite3_reset(r->hint_add);
	sqlite3_reset(r->hint_find);
	sqlite3_bind_text(r->hint_add, 1, hint, -1, SQLITE_STATIC);
	sqlite3_bind_text(r->hint_find, 1, hint, -1, SQLITE_STATIC);
	if (sqlite3_step(r->hint_add) == SQLITE_DONE &&
	    sqlite3_step(r->hint_find) == SQLITE_ROW)
		id = sqlite3_column_int64(r->hint_find, 0);
	return id;
}

/* One audit entry for the changes of class `from` -> `to` among the
 * chunk's (its ids, so that `show` lists it with each record). */
static int
audit(struct refresh *r, int n, const char *from, const char *to)
{
	struct dlq_buf args, result;
	const char *comma = "";
	int i, rc;

	dlq_buf_init(&args);
	dlq_buf_init(&result);
	dlq_buf_adds(&args, "{\"ids\":[");
	for (i = 0; i < n; i++)
		if (r->changes[i].sig[0] != '\0' &&
		    strcmp(r->changes[i].from, from) == 0 &&
		    strcmp(r->changes[i].to, to) == 0) {
			dlq_buf_printf(&args, "%s%lld", comma,
			    (long long)r->changes[i].id);
			comma = ",";
		}
	dlq_buf_adds(&args, "],\"from\":");
	dlq_buf_json_cstr(&args, from);
	dlq_buf_adds(&args, ",\"to\":");
	dlq_buf_json_cstr(&args, to);
	dlq_buf_adds(&args, ",\"reason\":\"" AUDIT_REASON "\"}");
	dlq_buf_printf(&result, "class %s -> %s", from, to);
	rc = args.oom || result.oom ? -1 : dlq_sqlite_cases_audit_add(r->archive,
	    dlq_wall_ms(), DLQ_REDRIVE_ACTOR, (long)getuid(),
	    DLQ_RECLASSIFY_AUDIT_COMMAND, args.data, result.data);
	dlq_buf_release(&args);
	dlq_buf_release(&result);
	return rc == DLQ_OK ? 0 : -1;
}

/* Writes the chunk's changes, and audits each move of class once. */
static int
write_changes(void *arg, int n)
{
	struct refresh *r = arg;
	struct change *c;
	int64_t hint;
	int i, j;

	for (i = 0; i < n; i++) {
		c = &r->changes[i];
		if ((hint = hint_id(r, c->hint)) == 0)
			return -1;
		sqlite3_reset(r->write);
		sqlite3_bind_text(r->write, 1, c->to, -1, SQLITE_STATIC);
		if (c->sig[0] != '\0')
			sqlite3_bind_text(r->write, 2, c->sig, -1,
			    SQLITE_STATIC);
		else
			sqlite3_bind_null(r->write, 2);
		sqlite3_bind_int64(r->write, 3, hint);
		sqlite3_bind_int64(r->write, 4, c->id);
		if (sqlite3_step(r->write) != SQLITE_DONE)
			return -1;
		if (c->sig[0] != '\0')
			r->changed++;
		else
			r->hints++;
	}
	for (i = 0; i < n; i++) {
		c = &r->changes[i];
		if (c->sig[0] == '\0')
			continue;
		for (j = 0; j < i; j++)		/* audited with an earlier one */
			if (r->changes[j].sig[0] != '\0' &&
			    strcmp(r->changes[j].from, c->from) == 0 &&
			    strcmp(r->changes[j].to, c->to) == 0)
				break;
		if (j == i && audit(r, n, c->from, c->to) == -1)
			return -1;
	}
	return 0;
}

/* Every unresolved record, chunk by chunk. */
static int
refresh_all(struct refresh *r)
{
	/* by rowid: the status index would have each chunk read and sort
	 * every unresolved record (500 000 of them: 90 s, not 2) */
	if (sqlite3_prepare_v2(r->db, "SELECT d.id, d.queue, d.reason,"
	    " d.error, d.class, coalesce(h.text, d.hint) FROM dead_letters d"
	    " NOT INDEXED LEFT JOIN hints h ON h.id = d.hint_id"
	    " WHERE d.id > ?1 AND d.status IN ('open', 'assigned')"
	    " ORDER BY d.id LIMIT ?2", -1, &r->read, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "UPDATE dead_letters SET class = ?1,"
	    " signature = coalesce(?2, signature), hint_id = ?3, hint = NULL"
	    " WHERE id = ?4", -1, &r->write, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "INSERT OR IGNORE INTO hints (text)"
	    " VALUES (?1)", -1, &r->hint_add, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "SELECT id FROM hints WHERE text = ?1",
	    -1, &r->hint_find, NULL) != SQLITE_OK)
		return -1;
	return dlq_sqlite_walk(read_chunk, write_changes, r);
}

/* Whether archive_meta notes other rules than r's (or none: an archive
 * of before they were noted, or a new one); -1 on error. */
static int
other_rules(const struct refresh *r)
{
	int64_t noted = 0;
	int found = dlq_sqlite_meta_read(r->db, RULES_KEY, &noted);

	return found == -1 ? -1 : found == 0 || noted != r->rules;
}

/* In the write transaction: the rules read again (handles opening at
 * once refresh once), and when other, every unresolved record, then
 * the rules noted. */
static int
refresh_other(void *arg)
{
	struct refresh *r = arg;
	int other = other_rules(r);

	if (other <= 0)
		return other;
	if (refresh_all(r) == -1)
		return -1;
	return dlq_sqlite_meta_write(r->db, RULES_KEY, r->rules);
}

static void
log_refreshed(const struct refresh *r, const char *path, int64_t ms)
{
	struct dlq_buf line = { 0 };

	if (dlq_log_begin(&line, DLQ_LOG_INFO, "classes_refreshed")) {
		dlq_log_str(&line, "path", path);
		dlq_log_int(&line, "records", r->records);
		dlq_log_int(&line, "changed", r->changed);
		dlq_log_int(&line, "hints", r->hints);
		dlq_log_int(&line, "ms", ms);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
}

int
dlq_sqlite_classrefresh_run(struct dlq_sqlite *archive, const char *path,
    const struct dlq_classifier *k)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct refresh *r;
	int64_t t0 = dlq_now_ms();
	char why[256];
	int other, rc = -1;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -1;
	r->archive = archive;
	r->db = db;
	r->k = k;
	r->rules = (int64_t)dlq_classify_rules_hash(k);
	dlq_buf_init(&r->norm);
	if ((other = other_rules(r)) != 1) {
		rc = other;	/* 0: these rules are noted; -1: an error */
		goto out;
	}
	if (dlq_sqlite_in_transaction(db, refresh_other, r, why,
	    sizeof(why)) == -1) {
		dlq_log(DLQ_LOG_WARN, "classes_refresh_failed", "path", path,
		    "error", why, NULL);
		goto out;
	}
	rc = 0;
	if (r->records > 0)
		log_refreshed(r, path, dlq_now_ms() - t0);
out:
	sqlite3_finalize(r->read);
	sqlite3_finalize(r->write);
	sqlite3_finalize(r->hint_add);
	sqlite3_finalize(r->hint_find);
	dlq_buf_release(&r->norm);
	free(r);
	return rc;
}
