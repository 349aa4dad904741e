/* mgmt.c - messages published to a queue in the last hour, from the
 * broker's management HTTP API (see mgmt.h). */
#include "mgmt.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "buf.h"
#include "url.h"
#include "webhook.h"

/* More than an answer about one queue with its samples. */
#define ANSWER_MAX	(1u << 20)

struct dlq_mgmt {
	const struct dlq_config	*cfg;
	CURL			*h;
	size_t			 base_len;	/* the URL without its final '/' */
	char			*vhost;		/* URL-escaped */
	int64_t			 deadline_ms;
	char			 host[128];	/* what errors may show */
	char			 errbuf[CURL_ERROR_SIZE];
	struct dlq_buf		 url;
	struct dlq_buf		 now, window;	/* the two answers */
};

/* The publish count in one answer (0 when the queue has no statistics
 * yet, or nothing was published to it), and the oldest of its samples
 * when it has any (*oldest stays -1). -1 when it is not a queue. */
static int
publish_count(const char *json, size_t len, int64_t *total, int64_t *oldest)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *stats, *n, *s, *v, *t;
	double oldest_t = 0;
	int64_t none;

	if (oldest == NULL)
		oldest = &none;
	*total = 0;
	*oldest = -1;
	if (!cJSON_IsObject(root) || !cJSON_IsString(
	    cJSON_GetObjectItemCaseSensitive(root, "name"))) {
		cJSON_Delete(root);
		return -1;
	}
	stats = cJSON_GetObjectItemCaseSensitive(root, "message_stats");
	if (cJSON_IsNumber(n = cJSON_GetObjectItemCaseSensitive(stats,
	    "publish")))
		*total = (int64_t)n->valuedouble;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(stats, "publish_details"),
	    "samples")) {
		t = cJSON_GetObjectItemCaseSensitive(s, "timestamp");
		v = cJSON_GetObjectItemCaseSensitive(s, "sample");
		if (cJSON_IsNumber(t) && cJSON_IsNumber(v) &&
		    (*oldest < 0 || t->valuedouble < oldest_t)) {
			*oldest = (int64_t)v->valuedouble;
			oldest_t = t->valuedouble;
		}
	}
	cJSON_Delete(root);
	return 0;
}

int
dlq_mgmt_parse(const char *now_json, size_t now_len,
    const char *window_json, size_t window_len, struct dlq_mgmt_count *c,
    char *why, size_t whylen)
{
	int64_t now, oldest, behind;	/* behind: the last full minute's */

	if (publish_count(now_json, now_len, &now, NULL) == -1 ||
	    publish_count(window_json, window_len, &behind, &oldest) == -1) {
		snprintf(why, whylen, "the answer is not a queue");
		return -1;
	}
	/* the oldest sample is the count when the window began */
	c->windowed = oldest >= 0;
	c->published = now - (oldest > 0 ? oldest : 0);
	if (c->published < 0)		/* counters restart with the node */
		c->published = now;
	return 0;
}

static size_t
keep(char *p, size_t size, size_t n, void *arg)
{
	struct dlq_buf *b = arg;

	(void)size;		/* always 1 */
	if (b->len + n > ANSWER_MAX)
		return 0;		/* ends the transfer: too large */
	dlq_buf_add(b, p, n);
	return b->oom ? 0 : n;
}

/* HTTP 401: why the management API refused the broker user, from the
 * reason RabbitMQ's answer gives. */
static void
refused(const struct dlq_mgmt *m, const struct dlq_buf *answer, char *why,
    size_t whylen)
{
	cJSON *root = cJSON_ParseWithLength(answer->data ? answer->data : "",
	    answer->len);
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "reason");
	const char *s = cJSON_IsString(r) ? r->valuestring : "";
	const char *who = dlq_url_has_userinfo(m->cfg->management_url) ?
	    "the user of rabbitmq.management_url" : "the broker user";
	const char *what, *vhost = "";

	if (strcmp(s, "Login failed") == 0)
		what = ": its credentials were refused";
	else if (strcmp(s, "Not management user") == 0)
		what = " lacks the monitoring tag";
	else {
		what = strstr(s, "virtual host") != NULL ? " has no permissions "
		    "on vhost " : ": its credentials were refused, or it lacks "
		    "the monitoring tag or permissions on vhost ";
		vhost = m->cfg->broker.vhost;
	}
	snprintf(why, whylen, "management API at %s answered HTTP 401 (%s%s%s)",
	    m->host, who, what, vhost);
	cJSON_Delete(root);
}

struct dlq_mgmt *
dlq_mgmt_open(const struct dlq_config *cfg, int64_t deadline_ms)
{
	struct dlq_mgmt *m = calloc(1, sizeof(*m));

	if (m == NULL || (m->h = curl_easy_init()) == NULL) {
		free(m);
		return NULL;
	}
	m->cfg = cfg;
	m->deadline_ms = deadline_ms;
	m->vhost = curl_easy_escape(m->h, cfg->broker.vhost, 0);
	m->base_len = strlen(cfg->management_url);
	while (m->base_len > 0 && cfg->management_url[m->base_len - 1] == '/')
		m->base_len--;
	dlq_url_host(cfg->management_url, m->host, sizeof(m->host));
	dlq_buf_init(&m->url);
	dlq_buf_init(&m->now);
	dlq_buf_init(&m->window);
	curl_easy_setopt(m->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(m->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(m->h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(m->h, CURLOPT_USERAGENT, "dlq-monitor");
	curl_easy_setopt(m->h, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(m->h, CURLOPT_ERRORBUFFER, m->errbuf);
	if (!dlq_url_has_userinfo(cfg->management_url)) {
		curl_easy_setopt(m->h, CURLOPT_USERNAME, cfg->broker.user);
		curl_easy_setopt(m->h, CURLOPT_PASSWORD, cfg->broker.password);
	}
	if (cfg->tls_ca_cert != NULL)
		curl_easy_setopt(m->h, CURLOPT_CAINFO, cfg->tls_ca_cert);
	if (!cfg->tls_verify) {
		curl_easy_setopt(m->h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(m->h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return m;
}

void
dlq_mgmt_close(struct dlq_mgmt *m)
{
	if (m == NULL)
		return;
	curl_free(m->vhost);
	curl_easy_cleanup(m->h);
	dlq_buf_release(&m->url);
	dlq_buf_release(&m->now);
	dlq_buf_release(&m->window);
	free(m);
}

/* GETs /api/`what`/VHOST/`a`?`query`, or with `b` the bindings
 * /api/`what`/VHOST/e/`a`/q/`b` (names URL-escaped), into `out`: 0; 1
 * when the broker has no such object; -1 with `why`. */
static int
get(struct dlq_mgmt *m, const char *what, const char *a, const char *b,
    const char *query, struct dlq_buf *out, char *why, size_t whylen)
{
	int64_t left = m->deadline_ms - dlq_now_ms();
	CURLcode rc;
	long status = 0;
	char *ea, *eb = NULL;

	if (left <= 0) {
		snprintf(why, whylen, "management API at %s: no answer in "
		    "time", m->host);
		return -1;
	}
	if (m->vhost == NULL || (ea = curl_easy_escape(m->h, a, 0)) == NULL ||
	    (b != NULL && (eb = curl_easy_escape(m->h, b, 0)) == NULL)) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	dlq_buf_reset(&m->url);
	dlq_buf_add(&m->url, m->cfg->management_url, m->base_len);
	if (eb == NULL)
		dlq_buf_printf(&m->url, "/api/%s/%s/%s?%s", what, m->vhost, ea,
		    query);
	else
		dlq_buf_printf(&m->url, "/api/%s/%s/e/%s/q/%s", what, m->vhost,
		    ea, eb);
	curl_free(ea);
	curl_free(eb);
	dlq_buf_reset(out);
	curl_easy_setopt(m->h, CURLOPT_URL, m->url.data);
	curl_easy_setopt(m->h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(m->h, CURLOPT_TIMEOUT_MS, (long)left);
	rc = curl_easy_perform(m->h);
	curl_easy_getinfo(m->h, CURLINFO_RESPONSE_CODE, &status);
	/* RabbitMQ's own 404 names the object; anything else at a wrong
	 * URL is an error, not a queue that is gone */
	if (rc == CURLE_OK && status == 404 && out->data != NULL &&
	    strstr(out->data, "\"Object Not Found\"") != NULL)
		return 1;
	if (rc == CURLE_WRITE_ERROR)
		snprintf(why, whylen, "management API at %s: the answer is "
		    "larger than %u KiB", m->host, ANSWER_MAX >> 10);
	else if (rc != CURLE_OK) {
		char e[CURL_ERROR_SIZE];
		dlq_curl_error(rc, m->errbuf, e, sizeof(e));
		snprintf(why, whylen, "management API at %s: %s", m->host, e);
	}
	else if (status == 401)
		refused(m, out, why, whylen);
	else if (status != 200)
		snprintf(why, whylen, "management API at %s answered HTTP %ld%s",
		    m->host, status, status == 404 ? " (not the management API, "
		    "or no such vhost)" : "");
	else
		return 0;
	return -1;
}

int
dlq_mgmt_published(struct dlq_mgmt *m, const char *queue,
    struct dlq_mgmt_count *c, char *why, size_t whylen)
{
	char query[160], bad[64];
	int rc;

	snprintf(query, sizeof(query), "columns=name,message_stats.publish,"
	    "message_stats.publish_details.samples&msg_rates_age=%d"
	    "&msg_rates_incr=60", DLQ_MGMT_WINDOW_MS / 1000);
	if ((rc = get(m, "queues", queue, NULL,
	    "columns=name,message_stats.publish", &m->now, why, whylen)) != 0 ||
	    (rc = get(m, "queues", queue, NULL, query, &m->window, why,
	    whylen)) != 0)
		return rc;
	if (dlq_mgmt_parse(m->now.data ? m->now.data : "", m->now.len,
	    m->window.data ? m->window.data : "", m->window.len, c, bad,
	    sizeof(bad)) == -1) {
		snprintf(why, whylen, "management API at %s: %s", m->host, bad);
		return -1;
	}
	return 0;
}

int
dlq_mgmt_parse_bound(const char *json, size_t len, const char *key)
{
	cJSON *all = cJSON_ParseWithLength(json, len);
	const cJSON *b, *k;
	int rc = 1;

	if (!cJSON_IsArray(all)) {
		cJSON_Delete(all);
		return -1;
	}
	cJSON_ArrayForEach(b, all) {
		k = cJSON_GetObjectItemCaseSensitive(b, "routing_key");
		if (cJSON_IsString(k) && strcmp(k->valuestring, key) == 0) {
			rc = 0;
			break;
		}
	}
	cJSON_Delete(all);
	return rc;
}

int
dlq_mgmt_bound(struct dlq_mgmt *m, const char *exchange, const char *queue,
    const char *key, char *why, size_t whylen)
{
	int rc;

	if ((rc = get(m, "bindings", exchange, queue, NULL, &m->now, why,
	    whylen)) != 0)
		return rc;		/* 1: the exchange or queue is gone */
	rc = dlq_mgmt_parse_bound(m->now.data ? m->now.data : "", m->now.len,
	    key);
	if (rc == -1)
		snprintf(why, whylen, "management API at %s: not a list of "
		    "bindings", m->host);
	return rc;
}
