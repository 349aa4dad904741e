/* alertbacklog.c - dead letters no delivered digest announced. */
#include "alertbacklog.h"
#include "sqlite.h"

#include <stdio.h>
#include <string.h>

#include "archive.h"
#include "signature.h"

/* The groups through the status index (open and assigned records of the
 * window); each group's first record gives its texts and sample; a
 * signature's first record ever says whether it is new. */
static const char BACKLOG_SQL[] =
	"SELECT d.queue, d.reason, d.class, coalesce(dlq_mask(d.error), ''),"
	" g.n,"
	" d.received_at, g.last, d.message_id,"
	" (SELECT f.received_at FROM dead_letters f WHERE f.id ="
	"  (SELECT min(x.id) FROM dead_letters x"
	"   WHERE x.signature = g.signature)) >= ?1"
	" FROM (SELECT signature, min(id) sid, count(*) n,"
	"  max(received_at) last FROM dead_letters"
	"  WHERE status IN ('open', 'assigned') AND received_at >= ?1"
	"  GROUP BY signature ORDER BY n DESC LIMIT ?2) g"
	" JOIN dead_letters d ON d.id = g.sid";

int64_t
dlq_sqlite_alert_backlog(struct dlq_sqlite *archive, int64_t since_ms, int max_groups,
    struct dlq_digest *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct dlq_group g;
	struct dlq_buf norm;
	sqlite3_stmt *st;
	const char *queue, *reason, *class, *error, *normalized;
	int64_t total = 0;
	int rc;

	if (sqlite3_prepare_v2(db, BACKLOG_SQL, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, since_ms);
	sqlite3_bind_int(st, 2, max_groups);
	dlq_buf_init(&norm);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&g, 0, sizeof(g));
		queue = dlq_sqlite_text(st, 0);
		reason = dlq_sqlite_text(st, 1);
		class = dlq_sqlite_text(st, 2);
		error = dlq_sqlite_text(st, 3);
		snprintf(g.queue, sizeof(g.queue), "%s", queue);
		snprintf(g.reason, sizeof(g.reason), "%s", reason);
		snprintf(g.class, sizeof(g.class), "%s", class);
		dlq_group_set_error(&g, error);
		dlq_buf_reset(&norm);
		dlq_signature_normalize(error, strlen(error), &norm);
		normalized = norm.data != NULL ? norm.data : "";
		/* the hash the consumers give this signature's dead letters,
		 * so that new ones join the group */
		g.hash = dlq_signature_hash(queue, reason, class, normalized);
		g.cause = dlq_signature_cause(reason, class, normalized);
		g.count = (uint64_t)sqlite3_column_int64(st, 4);
		g.first_ms = sqlite3_column_int64(st, 5);
		g.last_ms = sqlite3_column_int64(st, 6);
		if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
			snprintf(g.samples[0], sizeof(g.samples[0]), "%s",
			    dlq_sqlite_text(st, 7));
			g.n_samples = 1;
		}
		g.is_new = sqlite3_column_int(st, 8) != 0;
		dlq_digest_add_group(out, &g);
		total += (int64_t)g.count;
	}
	dlq_buf_release(&norm);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? total : -1;
}
