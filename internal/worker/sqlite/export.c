/* export.c - an SQLite archive read for an import into PostgreSQL
 * (import.h): opened read-only, its rows handed out in chunks as JSON
 * whose keys are PostgreSQL's columns.
 *
 * Text is made what PostgreSQL's text holds (valid UTF-8 without NUL:
 * other bytes as U+FFFD, as the logs and answers show them); the message
 * properties a replay sends that are not text keep their exact bytes in
 * props_raw, as the PostgreSQL archive's own inserts do. A record's hint
 * comes with it (SQLite keeps each hint once, in `hints`). Binary
 * columns go as bytea's hex text. */
#include "sqlitedb.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "buf.h"
#include "import.h"

#define CHUNK_ROWS	500
/* a chunk ends once it holds this much (large payloads) */
#define CHUNK_BYTES	(8 << 20)

struct dlq_export {
	sqlite3		*db;
	char		 err[512];
	struct dlq_buf	 text;
};

/* The columns of dead_letters whose bytes go as bytea, and the
 * properties whose exact bytes a replay needs. */
static const char *const bytea_cols[] = { "fingerprint", "headers_amqp",
	"payload", NULL };
static const char *const prop_cols[] = { "message_id", "correlation_id",
	"type", "content_type", "content_encoding", "app_id", "reply_to",
	"user_id", NULL };

static bool
listed(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

struct dlq_export *
dlq_sqlite_export_open(const char *path, char *err, size_t n)
{
	struct dlq_export *x = calloc(1, sizeof(*x));
	sqlite3_stmt *st = NULL;
	int version = -1;

	if (x == NULL) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	dlq_buf_init(&x->text);
	if (sqlite3_open_v2(path, &x->db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		snprintf(err, n, "cannot open it: %s", sqlite3_errmsg(x->db));
		goto fail;
	}
	if (sqlite3_prepare_v2(x->db, "PRAGMA user_version", -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version == -1 || sqlite3_prepare_v2(x->db, "SELECT 1 FROM"
	    " dead_letters LIMIT 1", -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, n, "not a dlq-monitor archive (%s)",
		    sqlite3_errmsg(x->db));
		goto fail;
	}
	sqlite3_finalize(st);
	if (version != DLQ_ARCHIVE_SCHEMA) {
		snprintf(err, n, "archive schema %d, this program's is %d: %s",
		    version, DLQ_ARCHIVE_SCHEMA, version < DLQ_ARCHIVE_SCHEMA ?
		    "start a dlq-worker of this release on it once (it "
		    "migrates the file), then import" : "import with the "
		    "release that wrote it");
		goto fail;
	}
	return x;
fail:
	dlq_sqlite_export_close(x);
	return NULL;
}

void
dlq_sqlite_export_close(struct dlq_export *x)
{
	if (x == NULL)
		return;
	sqlite3_close(x->db);
	dlq_buf_release(&x->text);
	free(x);
}

const char *
dlq_sqlite_export_errmsg(const struct dlq_export *x)
{
	return x->err;
}

/* Column i of the row as a JSON value for PostgreSQL's column `name`. */
static void
value_json(struct dlq_export *x, sqlite3_stmt *st, int i, const char *name,
    struct dlq_buf *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b;
	size_t n, k;

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		dlq_buf_adds(out, "null");
		return;
	case SQLITE_INTEGER:
		dlq_buf_printf(out, "%lld", (long long)sqlite3_column_int64(st,
		    i));
		return;
	case SQLITE_FLOAT:
		dlq_buf_printf(out, "%.17g", sqlite3_column_double(st, i));
		return;
	default:
		break;
	}
	b = sqlite3_column_blob(st, i);
	n = (size_t)sqlite3_column_bytes(st, i);
	if (listed(bytea_cols, name)) {
		dlq_buf_adds(out, "\"\\\\x");
		if (!dlq_buf_reserve(out, 2 * n + 1))
			return;
		for (k = 0; k < n; k++) {
			dlq_buf_addc(out, hex[b[k] >> 4]);
			dlq_buf_addc(out, hex[b[k] & 0xf]);
		}
		dlq_buf_addc(out, '"');
		return;
	}
	dlq_buf_reset(&x->text);
	dlq_buf_add_text(&x->text, b, n);
	dlq_buf_json_str(out, x->text.data ? x->text.data : "", x->text.len);
}

/* The properties of the row that are not text, their exact bytes as a
 * JSON object of base64 (as a JSON string), or null. */
static void
props_raw_json(sqlite3_stmt *st, struct dlq_buf *out)
{
	struct dlq_buf raw;
	const void *b;
	size_t n;
	int i;

	dlq_buf_init(&raw);
	for (i = 0; i < sqlite3_column_count(st); i++) {
		if (!listed(prop_cols, sqlite3_column_name(st, i)) ||
		    sqlite3_column_type(st, i) == SQLITE_NULL)
			continue;
		b = sqlite3_column_blob(st, i);
		n = (size_t)sqlite3_column_bytes(st, i);
		if (dlq_utf8_is_text(b, n))
			continue;
		dlq_buf_printf(&raw, "%s\"%s\":\"", raw.len ? "," : "{",
		    sqlite3_column_name(st, i));
		dlq_buf_base64(&raw, b, n);
		dlq_buf_addc(&raw, '"');
	}
	if (raw.len == 0)
		dlq_buf_adds(out, "null");
	else {
		dlq_buf_addc(&raw, '}');
		dlq_buf_json_str(out, raw.data, raw.len);
	}
	dlq_buf_release(&raw);
}

static const char *const queries[DLQ_IMPORT_TABLES] = {
	/* the hint of the record itself, or of its hint_id */
	"SELECT d.*, h.text AS hint_of_id FROM dead_letters d LEFT JOIN hints"
	" h ON h.id = d.hint_id WHERE d.id > ?1 ORDER BY d.id LIMIT ?2",
	"SELECT * FROM attempts WHERE id > ?1 ORDER BY id LIMIT ?2",
	"SELECT * FROM audit WHERE id > ?1 ORDER BY id LIMIT ?2",
	"SELECT * FROM redrive_circuits WHERE id > ?1 ORDER BY id LIMIT ?2",
	/* one chunk: the key is not a number */
	"SELECT key, value FROM archive_meta WHERE ?1 = 0 AND ?2 > 0 AND "
	DLQ_IMPORT_META_KEYS " ORDER BY key",
};

/* One row as a JSON object. */
static void
row_json(struct dlq_export *x, sqlite3_stmt *st, enum dlq_import_table t,
    struct dlq_buf *out)
{
	const char *name;
	int i, n = sqlite3_column_count(st), hint_of_id = -1;

	dlq_buf_addc(out, '{');
	for (i = 0; i < n; i++)
		if (strcmp(sqlite3_column_name(st, i), "hint_of_id") == 0)
			hint_of_id = i;
	for (i = 0; i < n; i++) {
		name = sqlite3_column_name(st, i);
		if (i == hint_of_id)
			continue;
		dlq_buf_printf(out, "%s\"%s\":", i > 0 ? "," : "", name);
		if (t == DLQ_IMPORT_RECORDS && strcmp(name, "hint_id") == 0)
			dlq_buf_adds(out, "null");	/* the text is there */
		else if (t == DLQ_IMPORT_RECORDS && strcmp(name, "hint") == 0 &&
		    sqlite3_column_type(st, i) == SQLITE_NULL && hint_of_id >= 0)
			value_json(x, st, hint_of_id, name, out);
		else
			value_json(x, st, i, name, out);
	}
	if (t == DLQ_IMPORT_RECORDS) {
		dlq_buf_adds(out, ",\"props_raw\":");
		props_raw_json(st, out);
	}
	dlq_buf_addc(out, '}');
}

int
dlq_sqlite_export_rows(struct dlq_export *x, enum dlq_import_table t,
    int64_t after, struct dlq_buf *json, int64_t *last)
{
	sqlite3_stmt *st;
	int rc = SQLITE_DONE, n = 0;

	if (sqlite3_prepare_v2(x->db, queries[t], -1, &st, NULL) != SQLITE_OK) {
		snprintf(x->err, sizeof(x->err), "%s", sqlite3_errmsg(x->db));
		return -1;
	}
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int(st, 2, CHUNK_ROWS);
	dlq_buf_addc(json, '[');
	while (json->len < CHUNK_BYTES && (rc = sqlite3_step(st)) ==
	    SQLITE_ROW) {
		if (n++ > 0)
			dlq_buf_addc(json, ',');
		row_json(x, st, t, json);
		*last = t == DLQ_IMPORT_META ? 1 : sqlite3_column_int64(st, 0);
	}
	dlq_buf_addc(json, ']');
	if (json->len < CHUNK_BYTES && rc != SQLITE_DONE) {
		snprintf(x->err, sizeof(x->err), "%s", sqlite3_errmsg(x->db));
		n = -1;
	}
	sqlite3_finalize(st);
	return n;
}

int64_t
dlq_sqlite_export_count(struct dlq_export *x, enum dlq_import_table t)
{
	sqlite3_stmt *st;
	char sql[256];
	int64_t n = -1;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s%s",
	    dlq_import_table_name(t), t == DLQ_IMPORT_META ? " WHERE "
	    DLQ_IMPORT_META_KEYS : "");
	if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	else
		snprintf(x->err, sizeof(x->err), "%s", sqlite3_errmsg(x->db));
	sqlite3_finalize(st);
	return n;
}
