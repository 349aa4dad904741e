/* import.c - an SQLite archive's rows written into the PostgreSQL
 * archive (import.h): each chunk, JSON objects keyed by column, one
 * INSERT ... SELECT FROM json_populate_recordset in its own transaction;
 * rows whose key is there already are left as they are, so a chunk
 * written twice (a run stopped before it knew) changes nothing. */
#include "import.h"

#include <stdio.h>
#include <stdlib.h>

#include "amqp.h"
#include "pg.h"

/* archive_meta: when the first import began */
#define IMPORT_KEY	"import_started"

static const char *const inserts[DLQ_IMPORT_TABLES] = {
	"INSERT INTO dead_letters SELECT * FROM"
	" json_populate_recordset(NULL::dead_letters, $1::json)"
	" ON CONFLICT DO NOTHING",
	"INSERT INTO attempts SELECT * FROM"
	" json_populate_recordset(NULL::attempts, $1::json)"
	" ON CONFLICT DO NOTHING",
	/* with the links of each entry to the records its args name, as
	 * the worker's own entries get them (audit.c) */
	"WITH a AS (INSERT INTO audit SELECT * FROM"
	" json_populate_recordset(NULL::audit, $1::json)"
	" ON CONFLICT DO NOTHING RETURNING id, args::jsonb -> 'ids' AS ids)"
	" INSERT INTO audit_ids SELECT DISTINCT j.value::numeric::bigint, a.id"
	" FROM a, " DLQ_PG_AUDIT_IDS("a") " ON CONFLICT DO NOTHING",
	"INSERT INTO redrive_circuits SELECT * FROM"
	" json_populate_recordset(NULL::redrive_circuits, $1::json)"
	" ON CONFLICT DO NOTHING",
	"INSERT INTO archive_meta SELECT * FROM"
	" json_populate_recordset(NULL::archive_meta, $1::json)"
	" ON CONFLICT DO NOTHING",
};

int
dlq_pg_import_begin(struct dlq_pg *a, char *err, size_t n)
{
	int64_t records = 0, began = 0;
	char now[24];
	const char *values[1] = { now };
	PGresult *res;

	if (dlq_pg_meta_get(a, IMPORT_KEY, &began) == -1 ||
	    dlq_pg_number(a, "import", "SELECT count(*) FROM dead_letters", 0,
	    NULL, &records) == -1) {
		snprintf(err, n, "%s", dlq_pg_err);
		return -1;
	}
	if (began == 0 && records > 0) {
		snprintf(err, n, "the PostgreSQL archive holds %lld record%s "
		    "already: import into an empty database, before the "
		    "replicas start", (long long)records, records == 1 ? "" :
		    "s");
		return -1;
	}
	if (began != 0)
		return 0;	/* an import begun before goes on */
	snprintf(now, sizeof(now), "%lld", (long long)dlq_wall_ms());
	res = dlq_pg_query(a, "import", "INSERT INTO archive_meta VALUES ('"
	    IMPORT_KEY "', $1) ON CONFLICT (key) DO NOTHING", 1, values, NULL,
	    NULL, a->wait_ms);
	PQclear(res);
	if (res == NULL) {
		snprintf(err, n, "%s", dlq_pg_err);
		return -1;
	}
	return 0;
}

int64_t
dlq_pg_import_after(struct dlq_pg *a, enum dlq_import_table t)
{
	char sql[128];
	int64_t v = 0;

	if (t == DLQ_IMPORT_META)	/* one chunk: 1 once it was copied */
		return (v = dlq_pg_import_count(a, t)) > 0 ? 1 : v;
	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM %s",
	    dlq_import_table_name(t));
	return dlq_pg_number(a, "import", sql, 0, NULL, &v) == -1 ? -1 : v;
}

int
dlq_pg_import_rows(struct dlq_pg *a, enum dlq_import_table t,
    const char *json)
{
	const char *values[1] = { json };
	PGresult *res;

	if (dlq_pg_exec(a, "import", "BEGIN") == -1)
		return -1;
	res = dlq_pg_query(a, "import", inserts[t], 1, values, NULL, NULL,
	    a->wait_ms);
	PQclear(res);
	if (res == NULL || dlq_pg_commit_tx(a) == -1) {
		if (a->conn != NULL)
			(void)dlq_pg_exec(a, "import", "ROLLBACK");
		return -1;
	}
	return 0;
}

int
dlq_pg_import_finish(struct dlq_pg *a)
{
	static const char *const tables[] = { "dead_letters", "attempts",
	    "audit", "redrive_circuits", NULL };
	char sql[256];
	int i;

	for (i = 0; tables[i] != NULL; i++) {
		snprintf(sql, sizeof(sql), "SELECT setval(pg_get_serial_sequence("
		    "'%s', 'id'), coalesce((SELECT max(id) FROM %s), 0) + 1,"
		    " false)", tables[i], tables[i]);
		if (dlq_pg_exec(a, "import", sql) == -1)
			return -1;
	}
	return 0;
}

int64_t
dlq_pg_import_count(struct dlq_pg *a, enum dlq_import_table t)
{
	char sql[256];
	int64_t v = -1;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s%s",
	    dlq_import_table_name(t), t == DLQ_IMPORT_META ? " WHERE "
	    DLQ_IMPORT_META_KEYS : "");
	return dlq_pg_number(a, "import", sql, 0, NULL, &v) == -1 ? -1 : v;
}
