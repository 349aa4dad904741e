/* preflight.c - the configuration's unsafe choices, said before they
 * matter (see preflight.h). */
#include "preflight.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "url.h"

bool
dlq_preflight_open_to_others(const char *path, char *mode, size_t n)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return false;
	snprintf(mode, n, "%04o", (unsigned)(st.st_mode & 07777));
	return (st.st_mode & S_IRWXO) != 0 ||
	    ((st.st_mode & S_IRWXG) != 0 && st.st_gid != getegid());
}

/* A config file that holds a secret should be readable by the worker's
 * user only; so should the TLS client key. */
static int
check_secret_files(const struct dlq_config *c, dlq_warn_fn *warn, void *arg)
{
	struct dlq_warning w = { .event = "config_insecure" };
	char mode[8];
	int n = 0;

	w.mode = mode;
	if (c->path != NULL && dlq_preflight_open_to_others(c->path, mode,
	    sizeof(mode)) && (c->n_targets > 0 ||
	    strcmp(c->broker.password, "guest") != 0 ||
	    (c->management_url != NULL &&
	    dlq_url_has_userinfo(c->management_url)))) {
		w.path = c->path;
		w.advice = "the file holds a password or webhook URL: chmod "
		    "600 (or 640 with the worker's group)";
		warn(&w, arg);
		n++;
	}
	if (c->tls_key != NULL && dlq_preflight_open_to_others(c->tls_key,
	    mode, sizeof(mode))) {
		w.path = c->tls_key;
		w.advice = "the file holds the TLS client key "
		    "(rabbitmq.tls_key): chmod 600 (or 640 with the worker's "
		    "group)";
		warn(&w, arg);
		n++;
	}
	return n;
}

/* A log.mask_keys list replaces the defaults: one written for a new key
 * ("iban") without the others prints passwords and tokens in clear in
 * the logs and digests. */
static int
check_mask_keys(const struct dlq_config *c, dlq_warn_fn *warn, void *arg)
{
	struct dlq_warning w = { .event = "mask_keys_narrowed" };
	struct dlq_buf missing;
	int n = 0;

	dlq_buf_init(&missing);
	if (dlq_config_mask_keys_left_out(c, &missing) > 0) {
		w.missing = missing.data;
		w.advice = "log.mask_keys replaces the default list: values "
		    "under these keys print in clear in the logs and digests; "
		    "add them to the list unless that is meant";
		warn(&w, arg);
		n++;
	}
	dlq_buf_release(&missing);
	return n;
}

/* tls_verify = false: TLS without knowing whom it talks to. Whoever sits
 * on the path can pose as the broker (or the management API) and read
 * the password and every dead letter. */
static int
check_tls_verify(const struct dlq_config *c, dlq_warn_fn *warn, void *arg)
{
	struct dlq_warning w = { .event = "tls_unverified" };
	bool https = c->management_url != NULL &&
	    strncmp(c->management_url, "https://", 8) == 0;

	if (c->tls_verify || (!c->broker.tls && !https))
		return 0;
	w.advice = "rabbitmq.tls_verify = false: the broker's certificate and "
	    "host name are not checked, so a man in the middle can read the "
	    "password and the dead letters; set rabbitmq.tls_ca_cert to the "
	    "broker's CA instead";
	warn(&w, arg);
	return 1;
}

static bool
loopback(const char *host)
{
	return strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
	    strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

/* The management API is asked with the broker's password (or the URL's
 * own) as HTTP Basic: over http:// to another host, in clear on the
 * network. */
static int
check_management_plaintext(const struct dlq_config *c, dlq_warn_fn *warn,
    void *arg)
{
	struct dlq_warning w = { .event = "management_plaintext" };
	char host[256];

	if (c->management_url == NULL ||
	    strncmp(c->management_url, "http://", 7) != 0 ||
	    dlq_url_host(c->management_url, host, sizeof(host)) == NULL ||
	    loopback(host))
		return 0;
	w.host = host;
	w.advice = "rabbitmq.management_url is plain http:// to another host: "
	    "the broker's password goes there in clear (HTTP Basic); use "
	    "https://";
	warn(&w, arg);
	return 1;
}

int
dlq_preflight(const struct dlq_config *c, dlq_warn_fn *warn, void *arg)
{
	return check_secret_files(c, warn, arg) + check_mask_keys(c, warn, arg) +
	    check_tls_verify(c, warn, arg) +
	    check_management_plaintext(c, warn, arg);
}

void
dlq_preflight_log(const struct dlq_warning *w, void *arg)
{
	struct dlq_buf line = { 0 };

	(void)arg;
	if (!dlq_log_begin(&line, DLQ_LOG_WARN, w->event))
		return;
	if (w->path != NULL)
		dlq_log_str(&line, "path", w->path);
	if (w->mode != NULL && w->path != NULL)
		dlq_log_str(&line, "mode", w->mode);
	if (w->missing != NULL)
		dlq_log_str(&line, "missing", w->missing);
	if (w->host != NULL)
		dlq_log_str(&line, "host", w->host);
	dlq_log_str(&line, "advice", w->advice);
	dlq_log_end(&line);
	dlq_buf_release(&line);
}
