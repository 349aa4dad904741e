/* alerttest.c - dlqctl test-alert: one clearly marked test digest to
 * every webhook target, sent now, without the worker. */
#include <curl/curl.h>
#include <stdio.h>

#include "alerttest.h"
#include "buf.h"
#include "digest.h"
#include "url.h"
#include "webhook.h"

int
dlq_alert_test(const struct dlq_config *c, FILE *out)
{
	struct dlq_webhook_result r;
	struct dlq_buf text, body;
	char title[200], host[256];
	CURL *h;
	size_t i;
	int failed = 0;

	if (c->n_targets == 0) {
		fprintf(out, "no webhook configured (alert.webhook_url, "
		    "DLQ_ALERT_WEBHOOK_URL, alert.targets): digests are only "
		    "logged\n");
		return 1;
	}
	dlq_digest_title(title, sizeof(title), "TEST ");
	dlq_buf_init(&text);
	dlq_buf_init(&body);
	if ((h = curl_easy_init()) == NULL)
		return (int)c->n_targets;
	for (i = 0; i < c->n_targets; i++) {
		dlq_buf_reset(&text);
		dlq_buf_reset(&body);
		dlq_digest_add_bold(&text, c->targets[i].format, title);
		dlq_buf_adds(&text, ": this is a test digest sent by "
		    "`dlqctl test-alert`. No dead letters are involved; if you "
		    "read this, the webhook works.");
		dlq_webhook_body(&body, c->targets[i].format, text.data,
		    text.len);
		dlq_url_host(c->targets[i].url, host, sizeof(host));
		if (dlq_webhook_post(h, &c->targets[i], &body,
		    (long)c->alert_timeout_ms, NULL, &r) == 0)
			fprintf(out, "%s (%s): HTTP %ld ok\n", host,
			    dlq_alert_format_name(c->targets[i].format), r.status);
		else {
			fprintf(out, "%s (%s): failed: %s\n", host,
			    dlq_alert_format_name(c->targets[i].format), r.error);
			failed++;
		}
	}
	curl_easy_cleanup(h);
	dlq_buf_release(&text);
	dlq_buf_release(&body);
	return failed;
}
