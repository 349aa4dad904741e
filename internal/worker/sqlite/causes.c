/* causes.c - failure signature groups gathered by cause (causes.h) on
 * the SQLite archive: its groups, the largest first, handed to
 * bycause.c, and its samples read when the answer needs their texts. */
#include "causes.h"
#include "sqlite.h"

#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "bycause.h"
#include "cases.h"

/* The texts of a sample, by id (dlq_bycause_read). */
static bool
read_sample(void *arg, int64_t id, struct dlq_bycause_sample *s)
{
	sqlite3_stmt *st = arg;
	int i;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, id);
	s->found = sqlite3_step(st) == SQLITE_ROW;
	for (i = 0; s->found && i < DLQ_BYCAUSE_TEXTS; i++) {
		s->text[i] = sqlite3_column_type(st, i) == SQLITE_NULL ? NULL :
		    sqlite3_column_text(st, i);
		s->len[i] = (size_t)sqlite3_column_bytes(st, i);
	}
	return true;
}

/* The group of the statement's row. */
static void
group_of(sqlite3_stmt *st, struct dlq_bycause_group *g)
{
	g->signature = dlq_sqlite_text(st, DLQ_GROUP_SIGNATURE);
	g->queue = dlq_sqlite_text(st, DLQ_GROUP_QUEUE);
	g->dlq = dlq_sqlite_text(st, DLQ_GROUP_DLQ);
	g->reason = dlq_sqlite_text(st, DLQ_GROUP_REASON);
	g->class = dlq_sqlite_text(st, DLQ_GROUP_CLASS);
	g->error = dlq_sqlite_text(st, DLQ_GROUP_ERROR);
	g->count = sqlite3_column_int64(st, DLQ_GROUP_COUNT);
	g->unresolved = sqlite3_column_int64(st, DLQ_GROUP_UNRESOLVED);
	g->first_seen = sqlite3_column_int64(st, DLQ_GROUP_FIRST_SEEN);
	g->last_seen = sqlite3_column_int64(st, DLQ_GROUP_LAST_SEEN);
	g->sample_id = sqlite3_column_int64(st, DLQ_GROUP_SAMPLE_ID);
}

int
dlq_sqlite_causes_list(struct dlq_sqlite *archive, const char *queue,
    const char *class, int64_t since_ms, int64_t limit, size_t max_groups,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct dlq_bycause *c = dlq_bycause_new(queue);
	struct dlq_bycause_group g;
	sqlite3_stmt *st = dlq_cases_group_rows(db, since_ms), *sample = NULL;
	int rc = SQLITE_ERROR, answer = DLQ_ERROR;
	bool ok = c != NULL;

	if (st == NULL || sqlite3_prepare_v2(db, "SELECT queue, reason, class,"
	    " dlq_mask(error), message_id FROM dead_letters WHERE id = ?1",
	    -1, &sample, NULL) != SQLITE_OK) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, dlq_sqlite_db_errmsg(db));
		goto out;
	}
	while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		group_of(st, &g);
		if (class != NULL && strcmp(class, g.class) != 0)
			continue;
		if (dlq_bycause_groups(c) == max_groups) {
			answer = dlq_bycause_too_many(max_groups, since_ms, out);
			goto out;
		}
		ok = dlq_bycause_add(c, &g);
	}
	if (ok && rc == SQLITE_DONE)
		answer = dlq_bycause_json(c, limit, read_sample, sample, out);
	else {
		dlq_buf_reset(out);
		dlq_buf_adds(out, !ok ? "out of memory" :
		    dlq_sqlite_db_errmsg(db));
	}
out:
	dlq_bycause_free(c);
	sqlite3_finalize(sample);
	sqlite3_finalize(st);
	return answer;
}
