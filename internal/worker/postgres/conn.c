/* conn.c - a PostgreSQL handle's connection: opening it, running a
 * statement with a deadline, losing it and making it again, and errors
 * that never show the password.
 *
 * libpq's blocking calls wait for a server forever: one stopped
 * (SIGSTOP, a VM paused) or cut off by the network would stall every
 * consumer behind the writer mutex, unacked deliveries piling up. Each
 * statement is therefore sent asynchronously and its answer awaited
 * with poll(2) up to a deadline; past it the connection is dropped, the
 * batch fails as on a full disk (archive_error, the consumers pause and
 * probe) and the next use connects again. */
#include "pg.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "log.h"
#include "proto.h"

_Thread_local char dlq_pg_err[DLQ_PG_ERR_MAX];

void
dlq_pg_set_err(struct dlq_pg *a, const char *what)
{
	const char *msg = a != NULL && a->conn != NULL ?
	    PQerrorMessage(a->conn) : "";
	size_t n;

	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "%s: %s", what,
	    *msg != '\0' ? msg : "no connection to the server");
	n = strlen(dlq_pg_err);	/* libpq's messages end in newlines */
	while (n > 0 && (dlq_pg_err[n - 1] == '\n' || dlq_pg_err[n - 1] == ' '))
		dlq_pg_err[--n] = '\0';
}

void
dlq_pg_target(const char *conninfo, char *out, size_t n)
{
	PQconninfoOption *opts, *o;
	const char *user = NULL, *host = NULL, *port = NULL, *db = NULL;

	snprintf(out, n, "postgresql");
	if ((opts = PQconninfoParse(conninfo, NULL)) == NULL)
		return;
	for (o = opts; o->keyword != NULL; o++) {
		if (o->val == NULL || *o->val == '\0')
			continue;
		if (strcmp(o->keyword, "user") == 0)
			user = o->val;
		else if (strcmp(o->keyword, "host") == 0)
			host = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			port = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			db = o->val;
	}
	snprintf(out, n, "postgresql://%s%s%s%s%s/%s", user ? user : "",
	    user ? "@" : "", host ? host : "", port ? ":" : "",
	    port ? port : "", db ? db : "");
	PQconninfoFree(opts);
}

static void
log_lost(struct dlq_pg *a)
{
	if (a->lost)
		return;
	a->lost = true;
	dlq_log(DLQ_LOG_WARN, "archive_connection_lost", "url", a->target,
	    "error", dlq_pg_err, "action", "the batch is not acked; the "
	    "next write connects again", NULL);
}

/* Drops a connection that broke or did not answer in time. */
static void
drop(struct dlq_pg *a)
{
	PQfinish(a->conn);
	a->conn = NULL;
	a->prepared = false;
	log_lost(a);
}

/* libpq keeps its input and output buffers as large as the largest
 * message the connection carried, for the connection's life: one that
 * carried a large dead letter (or a replay's claim of large ones) is
 * closed once no transaction is open, and made again when next needed,
 * so that the worker's memory goes back to where it was. */
static void
deflate(struct dlq_pg *a)
{
	if (!a->inflated || PQtransactionStatus(a->conn) != PQTRANS_IDLE)
		return;
	PQfinish(a->conn);
	a->conn = NULL;
	a->prepared = false;
	a->inflated = false;
}

/* Notes a statement whose parameters are large. */
static void
note_params(struct dlq_pg *a, int n, const char *const *values,
    const int *lengths, const int *formats)
{
	size_t bytes = 0;
	int i;

	for (i = 0; i < n; i++)
		if (formats != NULL && formats[i] == 1)
			bytes += (size_t)lengths[i];
		else if (values[i] != NULL)
			bytes += strlen(values[i]);
	if (bytes >= DLQ_PG_LARGE)
		a->inflated = true;
}

int
dlq_pg_connect(struct dlq_pg *a)
{
	/* libpq's own settings first: the connection string's win */
	static const char *const keys[] = { "connect_timeout",
	    "application_name", "dbname", NULL };
	char timeout[16];
	const char *values[] = { timeout, "dlq-worker", a->conninfo, NULL };

	if (a->conn != NULL && PQstatus(a->conn) == CONNECTION_OK)
		return 0;
	if (a->in_tx) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "the connection to "
		    "the archive broke during a transaction (rolled back)");
		return -1;
	}
	if (a->conn != NULL) {
		dlq_pg_set_err(a, "connection");
		drop(a);
	}
	/* a server that accepts and then says nothing (stopped) is given
	 * the statements' wait, in libpq's whole seconds (2 at least) */
	snprintf(timeout, sizeof(timeout), "%d", a->wait_ms / 1000 > 2 ?
	    a->wait_ms / 1000 : 2);
	a->conn = PQconnectdbParams(keys, values, 1);
	if (a->conn == NULL || PQstatus(a->conn) != CONNECTION_OK) {
		dlq_pg_set_err(a, "connect");
		PQfinish(a->conn);
		a->conn = NULL;
		return -1;
	}
	if (a->lost) {
		a->lost = false;
		dlq_log(DLQ_LOG_INFO, "archive_reconnected", "url", a->target,
		    NULL);
	}
	return 0;
}

/* Waits for the socket until `deadline` (dlq_now_ms). 1 ready, 0 timed
 * out, -1 error. */
static int
await(struct dlq_pg *a, short events, int64_t deadline)
{
	struct pollfd pfd = { PQsocket(a->conn), events, 0 };
	int64_t left;
	int rc;

	for (;;) {
		left = deadline - dlq_now_ms();
		/* stopping: a second more at most, not the whole wait */
		if (a->stop != NULL && atomic_load(a->stop) && left > 1000) {
			deadline = dlq_now_ms() + 1000;
			left = 1000;
		}
		if (left <= 0)
			return 0;
		rc = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (rc > 0)
			return 1;
		if (rc == -1 && errno != EINTR)
			return -1;
	}
}

PGresult *
dlq_pg_answer(struct dlq_pg *a, const char *what, int wait_ms)
{
	int64_t deadline = dlq_now_ms() + wait_ms;
	PGresult *res, *last = NULL;
	int rc;

	while ((rc = PQflush(a->conn)) == 1)
		if (await(a, POLLOUT | POLLIN, deadline) != 1)
			goto timeout;
	if (rc == -1)
		goto broken;
	for (;;) {
		while (PQisBusy(a->conn)) {
			if ((rc = await(a, POLLIN, deadline)) != 1) {
				if (rc == 0)
					goto timeout;
				goto broken;
			}
			if (!PQconsumeInput(a->conn))
				goto broken;
		}
		if ((res = PQgetResult(a->conn)) == NULL)
			break;
		PQclear(last);
		last = res;
	}
	if (last == NULL)
		goto broken;
	switch (PQresultStatus(last)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
		if (PQresultMemorySize(last) >= DLQ_PG_LARGE)
			a->inflated = true;
		deflate(a);	/* the result stays the caller's */
		return last;
	default:
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "%s: %s", what,
		    PQresultErrorMessage(last));
		dlq_pg_err[strcspn(dlq_pg_err, "\n")] = '\0';
		PQclear(last);
		if (PQstatus(a->conn) != CONNECTION_OK)
			drop(a);
		return NULL;
	}
timeout:
	PQclear(last);
	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "%s: no answer from the "
	    "server within %d ms", what, wait_ms);
	drop(a);
	return NULL;
broken:
	PQclear(last);
	dlq_pg_set_err(a, what);
	drop(a);
	return NULL;
}

PGresult *
dlq_pg_query(struct dlq_pg *a, const char *what, const char *sql, int n,
    const char *const *values, const int *lengths, const int *formats,
    int wait_ms)
{
	if (dlq_pg_connect(a) == -1)
		return NULL;
	note_params(a, n, values, lengths, formats);
	if (!PQsendQueryParams(a->conn, sql, n, NULL, values, lengths,
	    formats, 0)) {
		dlq_pg_set_err(a, what);
		drop(a);
		return NULL;
	}
	return dlq_pg_answer(a, what, wait_ms);
}

PGresult *
dlq_pg_query_prepared(struct dlq_pg *a, const char *what, const char *name,
    int n, const char *const *values, const int *lengths, const int *formats)
{
	if (dlq_pg_connect(a) == -1)
		return NULL;
	note_params(a, n, values, lengths, formats);
	if (!PQsendQueryPrepared(a->conn, name, n, values, lengths, formats,
	    0)) {
		dlq_pg_set_err(a, what);
		drop(a);
		return NULL;
	}
	return dlq_pg_answer(a, what, a->wait_ms);
}

int
dlq_pg_exec(struct dlq_pg *a, const char *what, const char *sql)
{
	PGresult *res = dlq_pg_query(a, what, sql, 0, NULL, NULL, NULL,
	    a->wait_ms);

	PQclear(res);
	return res != NULL ? 0 : -1;
}

int
dlq_pg_commit_tx(struct dlq_pg *a)
{
	PGresult *res = dlq_pg_query(a, "commit", "COMMIT", 0, NULL, NULL,
	    NULL, a->wait_ms);
	bool ok = res != NULL && strcmp(PQcmdStatus(res), "COMMIT") == 0;

	if (res != NULL && !ok)
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "commit: the "
		    "transaction was rolled back by the server");
	PQclear(res);
	return ok ? 0 : -1;
}

int
dlq_pg_number(struct dlq_pg *a, const char *what, const char *sql, int n,
    const char *const *values, int64_t *v)
{
	PGresult *res = dlq_pg_query(a, what, sql, n, values, NULL, NULL,
	    a->wait_ms);
	int rc = 0;

	if (res == NULL)
		return -1;
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)) {
		*v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		rc = 1;
	}
	PQclear(res);
	return rc;
}

int
dlq_pg_fail(struct dlq_buf *out)
{
	dlq_buf_reset(out);
	dlq_buf_adds(out, dlq_pg_err);
	return DLQ_ERROR;
}

int
dlq_pg_query_json(struct dlq_pg *a, const char *sql, int n,
    const char *const *values, struct dlq_buf *out)
{
	PGresult *res = dlq_pg_query(a, "query", sql, n, values, NULL, NULL,
	    a->wait_ms);
	cJSON *j;
	char *text;

	if (res == NULL)
		return dlq_pg_fail(out);
	if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0)) {
		PQclear(res);
		return DLQ_NOT_FOUND;
	}
	j = cJSON_Parse(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (j == NULL || (text = cJSON_PrintUnformatted(j)) == NULL) {
		cJSON_Delete(j);
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "query: out of memory");
		return dlq_pg_fail(out);
	}
	dlq_buf_adds(out, text);
	cJSON_free(text);
	cJSON_Delete(j);
	return DLQ_OK;
}

struct dlq_pg *
dlq_pg_open(const struct dlq_config *c)
{
	struct dlq_pg *a;
	int version;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	dlq_buf_init(&a->text);
	dlq_buf_init(&a->raw);
	a->wait_ms = c->busy_timeout_ms > DLQ_PG_MIN_WAIT_MS ?
	    (int)c->busy_timeout_ms : DLQ_PG_MIN_WAIT_MS;
	dlq_pg_target(c->archive_url, a->target, sizeof(a->target));
	a->mask = (struct dlq_redact){ &c->mask_keys, c->mask_emails,
	    (int)c->mask_digits_min, 0, dlq_redact_key_starts(&c->mask_keys) };
	if ((a->conninfo = strdup(c->archive_url)) == NULL ||
	    dlq_record_enc_init(&a->enc) == -1) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "out of memory");
		goto fail;
	}
	if (dlq_pg_connect(a) == -1 || dlq_pg_migrate(a, &version) == -1)
		goto fail;
	return a;
fail:
	dlq_log(DLQ_LOG_ERR, "archive_open_failed", "url", a->target,
	    "error", dlq_pg_err, NULL);
	dlq_pg_close(a);
	return NULL;
}

void
dlq_pg_close(struct dlq_pg *a)
{
	if (a == NULL)
		return;
	PQfinish(a->conn);
	if (a->conninfo != NULL)
		explicit_bzero(a->conninfo, strlen(a->conninfo));
	free(a->conninfo);
	dlq_record_enc_release(&a->enc);
	dlq_buf_release(&a->text);
	dlq_buf_release(&a->raw);
	free(a);
}

const char *
dlq_pg_errmsg(const struct dlq_pg *a)
{
	(void)a;
	return dlq_pg_err;
}

int
dlq_pg_describe(const struct dlq_config *c, struct dlq_buf *out)
{
	struct dlq_pg *a;
	int version;

	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->conninfo = strdup(c->archive_url)) == NULL) {
		free(a);
		dlq_buf_adds(out, "out of memory");
		return -1;
	}
	a->wait_ms = DLQ_PG_MIN_WAIT_MS * 10;
	dlq_pg_target(c->archive_url, a->target, sizeof(a->target));
	if (dlq_pg_connect(a) == -1 || (version = dlq_pg_schema_version(a))
	    == -1) {
		dlq_buf_printf(out, "%s: %s", a->target, dlq_pg_err);
		dlq_pg_close(a);
		return -1;
	}
	if (version == 0)
		dlq_buf_printf(out, "PostgreSQL at %s (server %d): no archive "
		    "yet; the worker's first start makes schema %d", a->target,
		    PQserverVersion(a->conn), DLQ_PG_SCHEMA);
	else
		dlq_buf_printf(out, "PostgreSQL at %s (server %d): schema %d "
		    "of %d%s", a->target, PQserverVersion(a->conn), version,
		    DLQ_PG_SCHEMA, version > DLQ_PG_SCHEMA ? " (newer than "
		    "this program: it would refuse it)" : version <
		    DLQ_PG_SCHEMA ? " (the worker's start migrates it)" : "");
	dlq_pg_close(a);
	return version > DLQ_PG_SCHEMA ? -1 : 0;
}

void
dlq_pg_stop_waits(struct dlq_pg *a, const atomic_bool *stop)
{
	a->stop = stop;
}

int
dlq_pg_cache(struct dlq_pg *a, int64_t kib)
{
	(void)a;	/* the server's shared_buffers are the cache */
	(void)kib;
	return 0;
}

void
dlq_pg_release_memory(struct dlq_pg *a)
{
	(void)a;
}

void
dlq_pg_busy_timeout(struct dlq_pg *a, int ms)
{
	a->wait_ms = ms > DLQ_PG_MIN_WAIT_MS ? ms : DLQ_PG_MIN_WAIT_MS;
}

bool
dlq_pg_moved(struct dlq_pg *a)
{
	(void)a;	/* a server's database is not a file to replace */
	return false;
}

bool
dlq_pg_writable(struct dlq_pg *a)
{
	PGresult *res = dlq_pg_query(a, "writable", "SELECT"
	    " current_setting('transaction_read_only')", 0, NULL, NULL, NULL,
	    a->wait_ms);
	bool ok = res != NULL && PQntuples(res) == 1 &&
	    strcmp(PQgetvalue(res, 0, 0), "off") == 0;

	PQclear(res);
	return ok;
}
