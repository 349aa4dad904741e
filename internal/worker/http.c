/* http.c - the worker's HTTP endpoint. */
#include "http.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "buf.h"
#include "gauges.h"
#include "log.h"
#include "metrics.h"
#include "url.h"

struct dlq_http {
	const struct dlq_config	*cfg;
	struct MHD_Daemon	*d;
	struct dlq_archive	*archive;
	struct dlq_buf		 out;
};

static void
render_metrics(struct dlq_http *h)
{
	dlq_metrics_render(&h->out);
	dlq_archive_metrics(h->archive, dlq_wall_ms(), h->cfg->owner_sla_ms,
	    &h->out);
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
	arch = !failing && dlq_archive_writable(h->archive);
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
	dlq_archive_busy_timeout(h->archive, 200);
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
