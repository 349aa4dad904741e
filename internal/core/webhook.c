/* webhook.c - POST a digest, read the status and Retry-After. */
#include "webhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define RETRY_AFTER_MAX_MS	(3600LL * 1000)

struct call {
	struct dlq_webhook_result *r;
	const atomic_bool	  *abort;
};

/* The answer's body is not needed; reading it keeps the connection
 * reusable. */
static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

int64_t
dlq_webhook_retry_after_ms(const char *value, time_t now)
{
	const char *p = value + strspn(value, " \t");
	size_t digits = strspn(p, "0123456789");
	int64_t secs = 0;
	time_t when;

	if (digits > 0 && p[digits + strspn(p + digits, " \t")] == '\0') {
		/* delay-seconds, however many digits: never overflowed */
		for (; digits > 0 && secs <= RETRY_AFTER_MAX_MS / 1000;
		    digits--, p++)
			secs = secs * 10 + (*p - '0');
	} else if ((when = curl_getdate(p, NULL)) != -1 && when > now)
		secs = (int64_t)when - (int64_t)now;
	return secs > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS :
	    secs * 1000;
}

static size_t
header(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;
	char value[128];

	if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
		snprintf(value, sizeof(value), "%.*s", (int)(len - 12), p + 12);
		value[strcspn(value, "\r\n")] = '\0';
		c->r->retry_after_ms = dlq_webhook_retry_after_ms(value,
		    time(NULL));
	}
	return len;
}

static int
progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct call *call = arg;

	(void)a, (void)b, (void)c, (void)d;
	return call->abort != NULL && *call->abort;
}

void
dlq_webhook_body(struct dlq_buf *body, enum dlq_alert_format f,
    const char *text, size_t len)
{
	bool discord = f == DLQ_FORMAT_DISCORD;

	dlq_buf_adds(body, discord ? "{\"content\":" : "{\"text\":");
	dlq_buf_json_str(body, text, len);
	/* flags 4: SUPPRESS_EMBEDS */
	dlq_buf_adds(body, discord ? ",\"allowed_mentions\":{\"parse\":[]},"
	    "\"flags\":4}" : "}");
}

void
dlq_curl_error(CURLcode rc, const char *errbuf, char *out, size_t n)
{
	bool tls = rc == CURLE_PEER_FAILED_VERIFICATION ||
	    rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_CACERT_BADFILE ||
	    rc == CURLE_SSL_CERTPROBLEM;

	snprintf(out, n, "%s", tls && errbuf[0] != '\0' ? errbuf :
	    curl_easy_strerror(rc));
}

int
dlq_webhook_post(CURL *h, const struct dlq_target *t,
    const struct dlq_buf *body, long timeout_ms, const atomic_bool *abort,
    struct dlq_webhook_result *r)
{
	struct curl_slist *hdrs = NULL;
	struct call call = { r, abort };
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	curl_easy_reset(h);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, t->url);
	if (t->ca_cert != NULL) {
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_cert);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
#if LIBCURL_VERSION_NUM >= 0x075700
		/* curl would keep the file's CAs for a day */
		curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	}
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "dlq-monitor");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &call);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &call);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

	rc = curl_easy_perform(h);
	curl_slist_free_all(hdrs);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);	/* it goes now */
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(r->error, sizeof(r->error), "aborted at shutdown");
		return -1;
	}
	if (rc != CURLE_OK) {
		dlq_curl_error(rc, errbuf, r->error, sizeof(r->error));
		return -1;
	}
	if (r->status < 200 || r->status > 299) {
		snprintf(r->error, sizeof(r->error), "HTTP %ld%s", r->status,
		    dlq_webhook_status_hint(r->status));
		return -1;
	}
	return 0;
}

const char *
dlq_webhook_status_hint(long status)
{
	switch (status) {
	case 400: case 413: case 415: case 422:
		return ": the service refused the message itself (is the "
		    "target's format right?)";
	case 401: case 403:
		return ": the service refused the webhook's credentials "
		    "(check the URL)";
	case 404: case 410:
		return ": no such webhook (removed, or a wrong URL)";
	default:
		return status >= 400 && status < 500 && status != 408 &&
		    status != 425 && status != 429 ? ": refused: it will "
		    "not work until the webhook is fixed" : "";
	}
}
