/* webhook.h - one HTTP POST of a digest with libcurl.
 *
 * Body {"text": "..."} (Discord: {"content": "..."}, no mention pings,
 * no link previews), Content-Type application/json, a total timeout
 * (5 s by default), CURLOPT_NOSIGNAL, http and https only, no redirects.
 * A handle is reused for keep-alive and belongs to one thread. The URL is
 * a secret (Slack and Google Chat put the credential in the path): it is
 * never logged, and no error text here contains more than the host. */
#ifndef DLQ_WEBHOOK_H
#define DLQ_WEBHOOK_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "buf.h"
#include "config.h"

struct dlq_webhook_result {
	long	 status;		/* HTTP status, 0: none */
	int64_t	 retry_after_ms;	/* from Retry-After, 0: none */
	char	 error[200];		/* why it failed, no secrets */
};

/* Appends {"text": <text>} to `body`; for Discord {"content": <text>}
 * with allowed_mentions empty (an "@everyone" in an error text pings no
 * one) and the flag that suppresses link previews. */
void	dlq_webhook_body(struct dlq_buf *body, enum dlq_alert_format,
	    const char *text, size_t len);

/* POSTs `body` to the target's URL, its certificate checked against the
 * target's ca_cert when set (read at each new connection, so a replaced
 * file counts from the next one), else the system's CAs. `abort` (may be
 * NULL) cuts the transfer short when it becomes true. Returns 0 on a 2xx
 * answer, -1 otherwise. */
int	dlq_webhook_post(CURL *, const struct dlq_target *,
	    const struct dlq_buf *body,
	    long timeout_ms, const atomic_bool *abort,
	    struct dlq_webhook_result *);

/* How long a Retry-After header's value (after "Retry-After:") asks to
 * wait, from `now`: delay-seconds or an HTTP date, at most an hour (a
 * service asking more would silence on-call for longer than anyone
 * means). 0 when the value is neither, or the date has passed. */
int64_t	dlq_webhook_retry_after_ms(const char *value, time_t now);

/* Why a transfer failed, for a log: curl's own words for `rc`, or for a
 * TLS failure its detail from `errbuf` (CURLOPT_ERRORBUFFER), e.g. "SSL
 * certificate problem: certificate has expired" (host names at most,
 * never a path). */
void	dlq_curl_error(CURLcode rc, const char *errbuf, char *out, size_t n);

/* What an on-call reader should know about a failed status: for the
 * 4xx that no retry cures (all but 408, 425, 429), ": " and a hint;
 * else "". */
const char *dlq_webhook_status_hint(long status);

#endif
