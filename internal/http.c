/* http.c - the worker's HTTP endpoint. */
#include "http.h"

#include <microhttpd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "buf.h"
#include "cases.h"
#include "log.h"
#include "metrics.h"
#include "url.h"

struct dlq_http {
	const struct dlq_config	*cfg;
	struct MHD_Daemon	*d;
	struct dlq_archive	*archive;
	struct dlq_buf		 out;
};

static const int owner_buckets[] = { 60, 300, 900, 3600, 14400, 86400,
	259200 };

/* Rows of (label..., value) as one metric family. */
static void
family(struct dlq_http *h, const char *name, const char *type,
    const char *help, const char *sql, const char *const *labels, int nl)
{
	sqlite3 *db = dlq_archive_db(h->archive);
	sqlite3_stmt *st;
	int i;

	dlq_buf_printf(&h->out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, dlq_wall_ms());
	sqlite3_bind_int64(st, 2, h->cfg->owner_sla_ms);
	while (sqlite3_step(st) == SQLITE_ROW) {
		dlq_buf_adds(&h->out, name);
		if (nl > 0) {
			dlq_buf_addc(&h->out, '{');
			for (i = 0; i < nl; i++) {
				dlq_buf_printf(&h->out, "%s%s=\"", i ? "," : "",
				    labels[i]);
				dlq_metrics_label(&h->out, (const char *)
				    sqlite3_column_text(st, i) ?
				    (const char *)sqlite3_column_text(st, i) : "");
				dlq_buf_addc(&h->out, '"');
			}
			dlq_buf_addc(&h->out, '}');
		}
		dlq_buf_printf(&h->out, " %.3f\n", sqlite3_column_double(st, nl));
	}
	sqlite3_finalize(st);
}

static void
time_to_owner(struct dlq_http *h)
{
	sqlite3 *db = dlq_archive_db(h->archive);
	uint64_t counts[8] = { 0 }, n = 0, cum = 0;
	double sum = 0, s;
	sqlite3_stmt *st;
	size_t i;

	dlq_buf_adds(&h->out, "# HELP dlq_time_to_owner_seconds Time from "
	    "dead-lettering to assignment.\n# TYPE dlq_time_to_owner_seconds "
	    "histogram\n");
	if (sqlite3_prepare_v2(db, "SELECT (assigned_at - received_at) / 1000.0"
	    " FROM dead_letters WHERE assigned_at IS NOT NULL", -1, &st, NULL) ==
	    SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			s = sqlite3_column_double(st, 0);
			for (i = 0; i < 7 && s > owner_buckets[i]; i++)
				;
			counts[i]++;
			n++;
			sum += s;
		}
		sqlite3_finalize(st);
	}
	for (i = 0; i < 7; i++) {
		cum += counts[i];
		dlq_buf_printf(&h->out, "dlq_time_to_owner_seconds_bucket{le=\"%d\"}"
		    " %llu\n", owner_buckets[i], (unsigned long long)cum);
	}
	dlq_buf_printf(&h->out, "dlq_time_to_owner_seconds_bucket{le=\"+Inf\"} "
	    "%llu\ndlq_time_to_owner_seconds_sum %.3f\n"
	    "dlq_time_to_owner_seconds_count %llu\n", (unsigned long long)n, sum,
	    (unsigned long long)n);
}

static void
render_metrics(struct dlq_http *h)
{
	/* every series of one DLQ has it in the label "dlq", as the
	 * consumers' (dlq_consumer_up) do, so that they join */
	static const char *const qs[] = { "dlq", "status" };
	static const char *const q[] = { "dlq" };
	static const char *const o[] = { "outcome" };

	dlq_metrics_render(&h->out);
	family(h, "dlq_unresolved", "gauge", "Unresolved dead letters by "
	    "DLQ and status.", "SELECT dlq, status, count(*) FROM "
	    "dead_letters WHERE status IN ('open', 'assigned', 'replaying') "
	    "GROUP BY dlq, status", qs, 2);
	family(h, "dlq_oldest_unresolved_age_seconds", "gauge", "Age of the "
	    "oldest unresolved dead letter by DLQ.", "SELECT dlq, "
	    "(?1 - min(received_at)) / 1000.0 FROM dead_letters WHERE status IN "
	    "('open', 'assigned', 'replaying') GROUP BY dlq", q, 1);
	family(h, "dlq_replays_total", "counter", "Replay attempts by outcome.",
	    "SELECT outcome, count(*) FROM attempts GROUP BY outcome", o, 1);
	family(h, "dlq_repeated_cycles_total", "counter", "Dead letters of "
	    "messages that had been replayed (a repeated cycle).",
	    "SELECT count(*) FROM dead_letters WHERE replay_of IS NOT NULL",
	    NULL, 0);
	family(h, "dlq_escalations_overdue", "gauge", "Assigned cases past "
	    "their escalate-at time.", "SELECT count(*) FROM dead_letters WHERE "
	    "status = 'assigned' AND escalate_at < ?1", NULL, 0);
	family(h, "dlq_cases_unowned_past_sla", "gauge", "Open cases without "
	    "an owner for longer than cases.owner_sla.", "SELECT count(*) FROM "
	    "dead_letters WHERE ?2 > 0 AND status = 'open' AND owner IS NULL "
	    "AND received_at < ?1 - ?2", NULL, 0);
	family(h, "dlq_oldest_awaiting_decision_age_seconds", "gauge", "Age of "
	    "the oldest open or assigned case.", "SELECT coalesce((?1 - "
	    "min(received_at)) / 1000.0, 0) FROM dead_letters WHERE status IN "
	    "('open', 'assigned')", NULL, 0);
	family(h, "dlq_replays_without_evidence_total", "counter", "Replay "
	    "attempts that recorded no evidence.", "SELECT count(*) FROM "
	    "attempts WHERE evidence IS NULL", NULL, 0);
	family(h, "dlq_max_dead_cycles", "gauge", "Most dead cycles of one "
	    "message replayed from the archive (its replay count when it died "
	    "last).", "SELECT "
	    "coalesce(max(replay_count), 0) FROM dead_letters WHERE "
	    "replay_of IS NOT NULL", NULL, 0);
	family(h, "dlq_redrive_attempts_total", "counter", "Automatic redrive "
	    "attempts by outcome.", "SELECT outcome, count(*) FROM attempts "
	    "WHERE actor = '" DLQ_REDRIVE_ACTOR "' GROUP BY outcome", o, 1);
	family(h, "dlq_redrive_left_for_humans", "gauge", "Unresolved cases "
	    "the redrive stopped trying (max_cycles or policy).", "SELECT "
	    "count(*) FROM dead_letters WHERE redrive_stopped_at IS NOT NULL "
	    "AND status IN ('open', 'assigned')", NULL, 0);
	family(h, "dlq_redrive_circuit_open", "gauge", "1 while the redrive "
	    "of a queue's DLQ is paused by its circuit.", "SELECT (SELECT d.dlq "
	    "FROM dead_letters d WHERE d.queue = c.queue LIMIT 1), 1 FROM "
	    "redrive_circuits c WHERE c.resumed_at IS NULL GROUP BY c.queue",
	    q, 1);
	time_to_owner(h);
}

static bool
archive_writable(struct dlq_http *h)
{
	sqlite3 *db = dlq_archive_db(h->archive);
	bool ok;

	dlq_archive_writer_lock();	/* a turn among the writers */
	ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
	if (ok)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	dlq_archive_writer_unlock();
	return ok;
}

/* The archive is writable when a write transaction can begin and no
 * consumer's last batch failed: a full disk lets the first but not the
 * second. */
static unsigned
render_ready(struct dlq_http *h)
{
	bool topo = dlq_metrics_topology_asserted(), arch, failing;
	char error[256];
	int down;

	dlq_buf_adds(&h->out, "{\"consumers_down\":[");
	down = dlq_metrics_consumers_down(&h->out);
	failing = dlq_metrics_archive_error(error, sizeof(error));
	arch = !failing && archive_writable(h);
	dlq_buf_printf(&h->out, "],\"topology_asserted\":%s,\"archive_writable\""
	    ":%s,", topo ? "true" : "false", arch ? "true" : "false");
	if (failing) {
		dlq_buf_adds(&h->out, "\"archive_error\":");
		dlq_buf_json_cstr(&h->out, error);
		dlq_buf_addc(&h->out, ',');
	}
	if (dlq_metrics_broker_error(error, sizeof(error))) {
		dlq_buf_adds(&h->out, "\"broker_error\":");
		dlq_buf_json_cstr(&h->out, error);
		dlq_buf_addc(&h->out, ',');
	}
	dlq_buf_printf(&h->out, "\"ready\":%s}\n", topo && arch && down == 0 ?
	    "true" : "false");
	return topo && arch && down == 0 ? MHD_HTTP_OK :
	    MHD_HTTP_SERVICE_UNAVAILABLE;
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **state)
{
	struct dlq_http *h = cls;
	struct MHD_Response *r;
	const char *type = "text/plain; charset=utf-8";
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result rc;

	(void)version, (void)upload, (void)upload_size, (void)state;
	dlq_buf_reset(&h->out);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		dlq_buf_adds(&h->out, "method not allowed\n");
	} else if (strcmp(url, "/healthz") == 0)
		dlq_buf_adds(&h->out, "ok\n");
	else if (strcmp(url, "/readyz") == 0) {
		status = render_ready(h);
		type = "application/json";
	} else if (strcmp(url, "/metrics") == 0) {
		render_metrics(h);
		type = "text/plain; version=0.0.4; charset=utf-8";
	} else {
		status = MHD_HTTP_NOT_FOUND;
		dlq_buf_adds(&h->out, "not found: try /healthz, /readyz, "
		    "/metrics\n");
	}
	r = MHD_create_response_from_buffer(h->out.len, h->out.data,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET, HEAD");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

struct dlq_http *
dlq_http_start(const struct dlq_config *c, bool *failed)
{
	struct sockaddr_storage sa;
	struct dlq_http *h;
	const char *why;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;

	*failed = false;
	if (c->http_listen == NULL)
		return NULL;
	*failed = true;
	if ((why = dlq_url_listen(c->http_listen, &sa)) != NULL) {
		dlq_log(DLQ_LOG_ERR, "http_failed", "listen", c->http_listen,
		    "error", why, NULL);
		return NULL;
	}
	/* [::] takes IPv4 connections too, as a listener of Linux's does */
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->cfg = c;
	dlq_buf_init(&h->out);
	if ((h->archive = dlq_archive_open(c)) == NULL)
		goto fail;
	sqlite3_busy_timeout(dlq_archive_db(h->archive), 200);
	/* 32 connections, 8 of one address, each closed after 10 s idle:
	 * a client that leaks connections (or holds them open on purpose)
	 * cannot keep Prometheus or a health check of another address out */
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_CONNECTION_LIMIT, 32U,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, 8U,
	    MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (h->d == NULL) {
		dlq_log(DLQ_LOG_ERR, "http_failed", "listen", c->http_listen,
		    "error", "cannot listen (address in use?)", NULL);
		goto fail;
	}
	dlq_log(DLQ_LOG_INFO, "http_listening", "listen", c->http_listen, NULL);
	*failed = false;
	return h;
fail:
	dlq_archive_close(h->archive);
	dlq_buf_release(&h->out);
	free(h);
	return NULL;
}

void
dlq_http_stop(struct dlq_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->d);
	dlq_archive_close(h->archive);
	dlq_buf_release(&h->out);
	free(h);
}
