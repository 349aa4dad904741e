/* http.c - the worker's HTTP endpoint. */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "buf.h"
#include "console.h"
#include "gauges.h"
#include "log.h"
#include "metrics.h"
#include "url.h"

struct dlq_http {
	const struct dlq_config	*cfg;
	struct MHD_Daemon	*d;
	struct dlq_archive	*archive;
	struct dlq_console	*console;
	struct dlq_buf		 out;
};

/* A request to the console being read: its body, and the query's
 * parameters. */
struct upload {
	struct dlq_buf	 body;
	bool		 too_large;
};

struct args {
	struct dlq_kv	 kv[DLQ_CONSOLE_ARGS_MAX];
	size_t		 n;
	bool		 too_many;
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
add_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args *a = cls;

	(void)kind;
	if (a->n == DLQ_CONSOLE_ARGS_MAX) {
		a->too_many = true;
		return MHD_NO;
	}
	a->kv[a->n].k = key;
	a->kv[a->n].v = value != NULL ? value : "";
	a->n++;
	return MHD_YES;
}

static void
peer_text(struct MHD_Connection *c, char *out, size_t n)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
	const struct sockaddr_in6 *s6;

	snprintf(out, n, "?");
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)
		    sa)->sin_addr, out, (socklen_t)n);
	else if (sa->sa_family == AF_INET6) {
		s6 = (const struct sockaddr_in6 *)(const void *)sa;
		/* an IPv4 client of a dual-stack listener, as IPv4 */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], out,
			    (socklen_t)n);
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)n);
	}
}

static enum MHD_Result
send_console(struct dlq_http *h, struct MHD_Connection *c, const char *url,
    const char *method, struct upload *up)
{
	struct dlq_console_req q;
	struct dlq_console_res res;
	struct MHD_Response *r;
	struct args a;
	char peer[64];
	enum MHD_Result rc;
	size_t i;

	memset(&q, 0, sizeof(q));
	memset(&res, 0, sizeof(res));
	memset(&a, 0, sizeof(a));
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &a);
	peer_text(c, peer, sizeof(peer));
	q.method = method;
	q.url = url;
	q.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	q.session = MHD_lookup_connection_value(c, MHD_COOKIE_KIND,
	    "dlq_session");
	q.csrf = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "X-CSRF-Token");
	q.proxy_user = h->cfg->console_proxy_header == NULL ? NULL :
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    h->cfg->console_proxy_header);
	q.if_none_match = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_IF_NONE_MATCH);
	q.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_TYPE);
	q.origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	q.host = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_HOST);
	q.peer = peer;
	q.args = a.kv;
	q.nargs = a.n;
	q.too_many_args = a.too_many;
	if (up != NULL) {
		q.body = up->body.data;
		q.body_len = up->body.len;
		q.body_too_large = up->too_large;
	}
	res.body = &h->out;
	res.status = 500;
	res.type = "text/plain; charset=utf-8";
	dlq_console_handle(h->console, &q, &res);
	r = res.fixed != NULL ? MHD_create_response_from_buffer(res.fixed_len,
	    (void *)res.fixed, MHD_RESPMEM_PERSISTENT) :
	    MHD_create_response_from_buffer(h->out.len, h->out.data,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", res.type);
	for (i = 0; i < res.nheaders; i++)
		MHD_add_response_header(r, res.headers[i].name,
		    res.headers[i].value);
	rc = MHD_queue_response(c, res.status, r);
	MHD_destroy_response(r);
	return rc;
}

/* The console's requests: a body is read whole first (at most
 * DLQ_CONSOLE_BODY_MAX bytes kept; past that it is refused once read). */
static enum MHD_Result
console(struct dlq_http *h, struct MHD_Connection *c, const char *url,
    const char *method, const char *data, size_t *size, void **state)
{
	struct upload *up = *state;

	if (strcmp(method, "POST") != 0)
		return send_console(h, c, url, method, NULL);
	if (up == NULL) {
		if ((up = calloc(1, sizeof(*up))) == NULL)
			return MHD_NO;
		dlq_buf_init(&up->body);
		*state = up;
		return MHD_YES;
	}
	if (*size > 0) {
		if (up->body.len + *size > DLQ_CONSOLE_BODY_MAX)
			up->too_large = true;
		else
			dlq_buf_add(&up->body, data, *size);
		*size = 0;
		return MHD_YES;
	}
	return send_console(h, c, url, method, up);
}

static void
completed(void *cls, struct MHD_Connection *c, void **state,
    enum MHD_RequestTerminationCode why)
{
	struct upload *up = *state;

	(void)cls, (void)c, (void)why;
	if (up == NULL)
		return;
	dlq_buf_release(&up->body);
	free(up);
	*state = NULL;
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

	(void)version;
	dlq_buf_reset(&h->out);
	if (dlq_console_serves(url))
		return console(h, c, url, method, upload, upload_size, state);
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
		    "/metrics, /ops/dlq (the console), /api/v1/\n");
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
	char error[512];
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
	if ((h->console = dlq_console_new(c, h->archive, error,
	    sizeof(error))) == NULL) {
		dlq_log(DLQ_LOG_ERR, "console_failed", "error", error, NULL);
		goto fail;
	}
	/* 32 connections, 8 of one address, each closed after 10 s idle:
	 * a client that leaks connections (or holds them open on purpose)
	 * cannot keep Prometheus or a health check of another address out */
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_CONNECTION_LIMIT, 32U,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, 8U,
	    MHD_OPTION_CONNECTION_TIMEOUT, 10U,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	if (h->d == NULL) {
		dlq_log(DLQ_LOG_ERR, "http_failed", "listen", c->http_listen,
		    "error", "cannot listen (address in use?)", NULL);
		goto fail;
	}
	dlq_log(DLQ_LOG_INFO, "http_listening", "listen", c->http_listen, NULL);
	*failed = false;
	return h;
fail:
	dlq_console_free(h->console);
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
	dlq_console_free(h->console);
	dlq_archive_close(h->archive);
	dlq_buf_release(&h->out);
	free(h);
}
