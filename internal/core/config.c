/* config.c - load the worker's configuration.
 *
 * Order: built-in defaults, then the libconfig file, then environment
 * variables (the source system's names). One table below holds every
 * setting with its file path, env name, type, default and bounds, so the
 * man page (dlq-worker.conf(5)), the example file and the checks cannot
 * drift apart silently (check_config).
 * Numbers are read as 64-bit and range-checked: a value out of range is an
 * error, never wrapped or clamped. Unknown settings are errors too: a typo
 * in a key would otherwise silently run on a default. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "confint.h"
#include "conflists.h"
#include "confparse.h"
#include "duration.h"
#include "suggest.h"
#include "termtext.h"
#include "url.h"

enum opt_kind { OPT_INT, OPT_STR, OPT_BOOL, OPT_LIST, OPT_LEVEL, OPT_TARGETS,
	OPT_RULES, OPT_POLICIES, OPT_RATIO };

struct opt {
	const char	*group;
	const char	*name;
	const char	*env;		/* NULL: file only */
	enum opt_kind	 kind;
	size_t		 off;
	int64_t		 min, max, def;
	const char	*def_s;		/* OPT_STR, OPT_LEVEL */
	const char	*const *def_list;
};

static const char *const default_mask_keys[] = {
	"password", "passwd", "pwd", "secret", "token", "authorization",
	"api_key", "apikey", "api-key", "credential", "private_key",
	"private-key", "privatekey", "cookie", "session", "phone", "msisdn",
	"email", "card", "iban", "cvv", "cvc", "otp", "passport", "birth",
	"pass", "dob", NULL
};

static const char *const default_error_headers[] = {
	"x-error", "x-exception-message", "x-exception", "MT-Fault-Message",
	"NServiceBus.ExceptionInfo.Message", NULL
};

#define OFF(f)	offsetof(struct dlq_config, f)

static const char *const no_names[] = { NULL };
static const char *const default_never[] = { "validation", "contract",
	"security", "expired", NULL };
static const char *const default_redrive_classes[] = { "transient",
	"rate_limited", NULL };

static const struct opt opts[] = {
	{ "rabbitmq", "url", "RABBITMQ_URL", OPT_STR, OFF(url), 0, 0, 0,
	    "amqp://guest:guest@localhost:5672/", NULL },
	{ "rabbitmq", "hosts", "RABBITMQ_HOSTS", OPT_LIST, OFF(hosts),
	    0, 0, 0, NULL, no_names },
	{ "rabbitmq", "heartbeat", NULL, OPT_INT, OFF(heartbeat_s),
	    0, 3600, 30, NULL, NULL },
	{ "rabbitmq", "prefetch", NULL, OPT_INT, OFF(prefetch),
	    1, 65535, 200, NULL, NULL },
	{ "rabbitmq", "reconnect_min_ms", NULL, OPT_INT, OFF(reconnect_min_ms),
	    10, 600000, 500, NULL, NULL },
	{ "rabbitmq", "reconnect_max_ms", NULL, OPT_INT, OFF(reconnect_max_ms),
	    10, 3600000, 30000, NULL, NULL },
	{ "rabbitmq", "shared_check_ms", NULL, OPT_INT, OFF(shared_check_ms),
	    0, 86400000, 60000, NULL, NULL },
	{ "rabbitmq", "management_url", "RABBITMQ_MANAGEMENT_URL", OPT_STR,
	    OFF(management_url), 0, 0, 0, NULL, NULL },
	{ "rabbitmq", "tls_ca_cert", NULL, OPT_STR, OFF(tls_ca_cert),
	    0, 0, 0, NULL, NULL },
	{ "rabbitmq", "tls_cert", NULL, OPT_STR, OFF(tls_cert),
	    0, 0, 0, NULL, NULL },
	{ "rabbitmq", "tls_key", NULL, OPT_STR, OFF(tls_key),
	    0, 0, 0, NULL, NULL },
	{ "rabbitmq", "auth", NULL, OPT_STR, OFF(auth), 0, 0, 0, "plain",
	    NULL },
	{ "rabbitmq", "tls_verify", NULL, OPT_BOOL, OFF(tls_verify),
	    0, 1, 1, NULL, NULL },
	{ "topology", "file", "DLQ_TOPOLOGY_FILE", OPT_STR, OFF(topology_file),
	    0, 0, 0, NULL, NULL },
	{ "topology", "dlq_suffix", "RABBITMQ_DLQ_SUFFIX", OPT_STR,
	    OFF(dlq_suffix), 0, 0, 0, NULL, NULL },
	{ "topology", "reassert", NULL, OPT_BOOL, OFF(reassert),
	    0, 1, 1, NULL, NULL },
	{ "alert", "webhook_url", "DLQ_ALERT_WEBHOOK_URL", OPT_STR,
	    OFF(webhook_url), 0, 0, 0, NULL, NULL },
	{ "alert", "webhook_format", "DLQ_ALERT_WEBHOOK_FORMAT", OPT_STR,
	    OFF(webhook_format), 0, 0, 0, "auto", NULL },
	{ "alert", "webhook_ca_cert", "DLQ_ALERT_WEBHOOK_CA_CERT", OPT_STR,
	    OFF(webhook_ca_cert), 0, 0, 0, NULL, NULL },
	{ "alert", "targets", NULL, OPT_TARGETS, OFF(extra_targets),
	    0, 0, 0, NULL, NULL },
	{ "alert", "cooldown_ms", "DLQ_ALERT_COOLDOWN_MS", OPT_INT,
	    OFF(cooldown_ms), 0, 7LL * 24 * 3600 * 1000, 300000, NULL, NULL },
	{ "alert", "max_chars", NULL, OPT_INT, OFF(max_chars),
	    500, 30000, 3500, NULL, NULL },
	{ "alert", "max_groups", NULL, OPT_INT, OFF(max_groups),
	    1, 10000, 100, NULL, NULL },
	{ "alert", "timeout_ms", NULL, OPT_INT, OFF(alert_timeout_ms),
	    100, 60000, 5000, NULL, NULL },
	{ "alert", "threshold", NULL, OPT_INT, OFF(threshold),
	    0, 100000000, 100, NULL, NULL },
	{ "alert", "max_age_ms", NULL, OPT_INT, OFF(threshold_max_age_ms),
	    0, 3650LL * 86400000, 86400000, NULL, NULL },
	{ "alert", "threshold_cooldown_ms", NULL, OPT_INT,
	    OFF(threshold_cooldown_ms), 0, 7LL * 86400000, 1800000, NULL, NULL },
	{ "alert", "threshold_check_ms", NULL, OPT_INT, OFF(threshold_check_ms),
	    100, 3600000, 10000, NULL, NULL },
	{ "http", "listen", "DLQ_HTTP_LISTEN", OPT_STR, OFF(http_listen),
	    0, 0, 0, "127.0.0.1:9464", NULL },
	{ "console", "tokens_file", "DLQ_CONSOLE_TOKENS_FILE", OPT_STR,
	    OFF(console_tokens_file), 0, 0, 0, NULL, NULL },
	{ "console", "public_url", "DLQ_CONSOLE_PUBLIC_URL", OPT_STR,
	    OFF(console_public_url), 0, 0, 0, NULL, NULL },
	{ "console", "session_ms", NULL, OPT_INT, OFF(console_session_ms),
	    60000, 7LL * 86400000, 8LL * 3600000, NULL, NULL },
	{ "console", "trusted_proxies", NULL, OPT_LIST, OFF(console_proxies),
	    0, 0, 0, NULL, no_names },
	{ "console", "proxy_user_header", NULL, OPT_STR,
	    OFF(console_proxy_header), 0, 0, 0, NULL, NULL },
	{ "log", "level", "DLQ_LOG_LEVEL", OPT_LEVEL, OFF(log_level),
	    0, 0, 0, "info", NULL },
	{ "log", "payload_max_bytes", NULL, OPT_INT, OFF(payload_max_bytes),
	    0, 1 << 20, 4096, NULL, NULL },
	{ "log", "mask_keys", NULL, OPT_LIST, OFF(mask_keys),
	    0, 0, 0, NULL, default_mask_keys },
	{ "log", "mask_emails", NULL, OPT_BOOL, OFF(mask_emails),
	    0, 1, 1, NULL, NULL },
	{ "log", "mask_digits_min", NULL, OPT_INT, OFF(mask_digits_min),
	    0, 64, 8, NULL, NULL },
	{ "deadletter", "error_headers", NULL, OPT_LIST, OFF(error_headers),
	    0, 0, 0, NULL, default_error_headers },
	{ "archive", "path", "DLQ_ARCHIVE_PATH", OPT_STR, OFF(archive_path),
	    0, 0, 0, "/var/lib/dlq-monitor/archive.db", NULL },
	{ "archive", "url", "DLQ_ARCHIVE_URL", OPT_STR, OFF(archive_url),
	    0, 0, 0, NULL, NULL },
	{ "archive", "busy_timeout_ms", NULL, OPT_INT, OFF(busy_timeout_ms),
	    0, 600000, 5000, NULL, NULL },
	{ "archive", "retention_days", NULL, OPT_INT, OFF(retention_days),
	    0, 36500, 30, NULL, NULL },
	{ "archive", "audit_retention_days", NULL, OPT_INT,
	    OFF(audit_retention_days), 0, 36500, 365, NULL, NULL },
	{ "archive", "batch_max", NULL, OPT_INT, OFF(batch_max),
	    1, 10000, 256, NULL, NULL },
	{ "control", "socket", "DLQ_CONTROL_SOCKET", OPT_STR,
	    OFF(control_socket), 0, 0, 0, DLQ_CONTROL_SOCKET_DEFAULT, NULL },
	{ "control", "idle_timeout_ms", NULL, OPT_INT, OFF(control_idle_ms),
	    1000, 3600000, 60000, NULL, NULL },
	{ "control", "viewers", NULL, OPT_LIST, OFF(viewers),
	    0, 0, 0, NULL, no_names },
	{ "control", "operators", NULL, OPT_LIST, OFF(operators),
	    0, 0, 0, NULL, no_names },
	{ "control", "admins", NULL, OPT_LIST, OFF(admins),
	    0, 0, 0, NULL, no_names },
	{ "classify", "rules", NULL, OPT_RULES, OFF(rules),
	    0, 0, 0, NULL, NULL },
	{ "replay", "max_age_ms", NULL, OPT_INT, OFF(replay_max_age_ms),
	    0, 3650LL * 86400000, 7LL * 86400000, NULL, NULL },
	{ "replay", "max_replays", NULL, OPT_INT, OFF(replay_max_replays),
	    0, 1000, 3, NULL, NULL },
	{ "replay", "never", NULL, OPT_LIST, OFF(replay_never),
	    0, 0, 0, NULL, default_never },
	{ "replay", "require_owner", NULL, OPT_BOOL, OFF(replay_require_owner),
	    0, 1, 0, NULL, NULL },
	{ "replay", "rate", NULL, OPT_INT, OFF(replay_rate),
	    0, 100000, 50, NULL, NULL },
	{ "replay", "limit", NULL, OPT_INT, OFF(replay_limit),
	    1, 100000, 100, NULL, NULL },
	{ "replay", "queues", NULL, OPT_POLICIES, OFF(replay_queues),
	    0, 0, 0, NULL, NULL },
	{ "replay", "evidence_max_age_ms", NULL, OPT_INT,
	    OFF(replay_evidence_max_age_ms), 0, 3650LL * 86400000, 0, NULL,
	    NULL },
	{ "cases", "owner_sla_ms", NULL, OPT_INT, OFF(owner_sla_ms),
	    0, 3650LL * 86400000, 4LL * 3600000, NULL, NULL },
	{ "redrive", "queues", NULL, OPT_LIST, OFF(redrive_queues),
	    0, 0, 0, NULL, no_names },
	{ "redrive", "classes", NULL, OPT_LIST, OFF(redrive_classes),
	    0, 0, 0, NULL, default_redrive_classes },
	{ "redrive", "min_age_ms", NULL, OPT_INT, OFF(redrive_min_age_ms),
	    0, 30LL * 86400000, 60000, NULL, NULL },
	{ "redrive", "interval_ms", NULL, OPT_INT, OFF(redrive_interval_ms),
	    100, 86400000, 300000, NULL, NULL },
	{ "redrive", "batch", NULL, OPT_INT, OFF(redrive_batch),
	    1, 500, 50, NULL, NULL },
	{ "redrive", "max_cycles", NULL, OPT_INT, OFF(redrive_max_cycles),
	    1, 100, 3, NULL, NULL },
	{ "redrive", "trip_ratio", NULL, OPT_RATIO, OFF(redrive_trip_permille),
	    0, 1000, 500, NULL, NULL },
	{ "redrive", "watch_ms", NULL, OPT_INT, OFF(redrive_watch_ms),
	    0, 86400000, 60000, NULL, NULL },
};

#define NOPTS	(sizeof(opts) / sizeof(opts[0]))

const char *
dlq_config_setting(size_t i, char *buf, size_t n, const char **env)
{
	if (i >= NOPTS)
		return NULL;
	snprintf(buf, n, "%s.%s", opts[i].group, opts[i].name);
	*env = opts[i].env;
	return buf;
}



static void *
field(struct dlq_config *c, const struct opt *o)
{
	return (char *)c + o->off;
}

/* The key of an option in the file, "group.name". */
static const char *
key_of(const struct opt *o, char *key, size_t n)
{
	snprintf(key, n, "%s.%s", o->group, o->name);
	return key;
}


static void
set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
}

static bool
is_secret(const struct opt *o)
{
	return strcmp(o->name, "url") == 0 || strcmp(o->name, "webhook_url") == 0
	    || strcmp(o->name, "management_url") == 0;
}

/* A file name read at each connection (CA, certificate, key): relative
 * to the config file, checked readable at load. */
static bool
is_file(const struct opt *o)
{
	return o->kind == OPT_STR && (strncmp(o->name, "tls_", 4) == 0 ||
	    strcmp(o->name, "webhook_ca_cert") == 0 ||
	    strcmp(o->name, "tokens_file") == 0);
}

/* Checks a string value of `o`; NULL when fine, else the reason. */
static const char *
check_str(const struct opt *o, const char *v)
{
	struct dlq_broker b;
	const char *why = NULL;

	/* empty is a mistake here (a template's unset variable), not "off" */
	if (*v == '\0' && (strcmp(o->name, "path") == 0 ||
	    strcmp(o->name, "socket") == 0))
		return "must not be empty (leave the setting out for its "
		    "default)";
	/* a file name may hold spaces; a control character is a paste */
	if ((strcmp(o->name, "path") == 0 || strcmp(o->name, "socket") == 0 ||
	    strcmp(o->name, "file") == 0) && dlq_term_has_control(v, false))
		return "must not contain control characters (a trailing "
		    "newline?)";
	/* SQLite's name for a database in memory: each connection would
	 * have its own, and all of it gone at exit, acked dead letters too */
	if (strcmp(o->name, "path") == 0 && strcmp(v, ":memory:") == 0)
		return "must be a file: an archive in memory would lose every "
		    "dead letter the worker acked at its exit";
	if (*v == '\0' && strcmp(o->name, "listen") == 0)
		return "must not be empty (0 turns it off; leave the setting out "
		    "for its default)";
	if (strcmp(o->name, "url") == 0 && strcmp(o->group, "archive") == 0)
		return dlq_url_postgres_problem(v);
	if (strcmp(o->name, "url") == 0) {
		memset(&b, 0, sizeof(b));
		if (dlq_url_parse_amqp(v, &b, &why) == 0)
			why = NULL;
		dlq_broker_release(&b);
		return why;
	}
	if (strcmp(o->name, "public_url") == 0) {
		if (*v == '\0')
			return NULL;
		if (strncmp(v, "http://", 7) != 0 &&
		    strncmp(v, "https://", 8) != 0)
			return "must be an http:// or https:// URL (where "
			    "operators open the console, e.g. "
			    "https://dlq.example.com)";
		if (dlq_term_has_control(v, false) || strpbrk(v, " <>|\"") !=
		    NULL)
			return "must not contain spaces, control characters or "
			    "< > | \" (it goes into chat links)";
		return NULL;
	}
	if (strcmp(o->name, "proxy_user_header") == 0) {
		if (*v == '\0' || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"
		    "ghijklmnopqrstuvwxyz0123456789-") != strlen(v))
			return "must be a header name (letters, digits and -, "
			    "e.g. X-Forwarded-User)";
		return NULL;
	}
	if (strcmp(o->name, "webhook_url") == 0 ||
	    strcmp(o->name, "management_url") == 0) {
		return *v == '\0' ? NULL : dlq_url_http_problem(v);
	}
	if (strcmp(o->name, "listen") == 0) {
		struct sockaddr_storage ss;
		return strcmp(v, "0") == 0 ? NULL : dlq_url_listen(v, &ss);
	}
	if (strcmp(o->name, "webhook_format") == 0) {
		enum dlq_alert_format f;
		if (dlq_alert_format_parse(v, &f) == -1)
			return "expected auto, slack, google_chat, discord "
			    "or plain";
		return NULL;
	}
	if (strcmp(o->name, "socket") == 0) {
		/* what fits in sockaddr_un's sun_path with its final NUL */
		if (strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return "too long for a Unix socket path (at most 107 "
			    "bytes)";
		return NULL;
	}
	if (is_file(o)) {
		if (*v == '\0')
			return strstr(o->name, "ca_cert") != NULL ?
			    "must not be empty (leave the setting out for the "
			    "system's CAs)" : strcmp(o->name, "tokens_file") ==
			    0 ? "must not be empty (leave the setting out for "
			    "no console users)" : "must not be empty (leave the "
			    "setting out for no client certificate)";
		if (dlq_term_has_control(v, false))
			return "must not contain control characters (a trailing "
			    "newline?)";
		return NULL;
	}
	if (strcmp(o->name, "auth") == 0)
		return strcmp(v, "plain") == 0 || strcmp(v, "external") == 0 ?
		    NULL : "expected plain (the URL's user and password) or "
		    "external (the client certificate)";
	if (strcmp(o->name, "dlq_suffix") == 0) {
		if (*v == '\0' || strlen(v) > 64)
			return "must be 1 to 64 characters";
		if (dlq_term_has_control(v, true))
			return "must not contain spaces or control characters";
		return NULL;
	}
	return NULL;
}

static void
report(struct dlq_buf *errors, const char *where, const struct opt *o,
    const char *value, const char *why)
{
	/* a URL is shown with its password masked; so is a node of
	 * rabbitmq.hosts written as one (refused: user and password come
	 * from rabbitmq.url) */
	bool masked = strcmp(o->name, "url") == 0 || (strcmp(o->name,
	    "hosts") == 0 && value != NULL && strchr(value, '@') != NULL);

	dlq_buf_printf(errors, "%s: %s.%s: ", where, o->group, o->name);
	if (value != NULL && !is_secret(o) && !masked) {
		dlq_buf_adds(errors, "bad value '");
		dlq_term_add(errors, value);
		dlq_buf_adds(errors, "': ");
	} else if (value != NULL && masked) {
		char *m = dlq_url_mask(value);
		dlq_buf_adds(errors, "bad value '");
		dlq_term_add(errors, m ? m : "?");
		dlq_buf_adds(errors, "': ");
		free(m);
	}
	dlq_buf_printf(errors, "%s\n", why);
}

/* For a setting in milliseconds written as "5m" or "30s": what it takes
 * (appended to the error), else "". */
static const char *
ms_hint(const struct opt *o)
{
	return o->kind == OPT_INT && dlq_confint_in_ms(o->name) ?
	    " (milliseconds, or a duration: 300000 or \"5m\")" : "";
}

static int	apply_int(struct dlq_config *, const struct opt *, int64_t,
		    const char *, const char *, struct dlq_buf *);

/* A setting in milliseconds written with a unit ("5m", "30s", "7d"). */
static int
apply_duration(struct dlq_config *c, const struct opt *o, const char *v,
    const char *where, struct dlq_buf *errors)
{
	int64_t ms = dlq_parse_duration(v);

	if (ms < 0) {
		report(errors, where, o, v, ms == DLQ_DURATION_TOO_LONG ?
		    "too long (at most 3650d)" : "not a duration (a number "
		    "and ms, s, m, h, d or w: 500ms, 30s, 5m, 7d; or a number "
		    "of milliseconds)");
		return -1;
	}
	return apply_int(c, o, ms, where, v, errors);
}

static int
apply_int(struct dlq_config *c, const struct opt *o, int64_t v,
    const char *where, const char *text, struct dlq_buf *errors)
{
	char why[96];

	if (v < o->min || v > o->max) {
		snprintf(why, sizeof(why), "out of range %lld..%lld",
		    (long long)o->min, (long long)o->max);
		report(errors, where, o, text, why);
		return -1;
	}
	if (o->kind == OPT_BOOL)
		*(bool *)field(c, o) = v != 0;
	else
		*(int64_t *)field(c, o) = v;
	return 0;
}

static int
apply_str(struct dlq_config *c, const struct opt *o, const char *v,
    const char *where, struct dlq_buf *errors)
{
	const char *why;
	enum dlq_log_level l;

	if (o->kind == OPT_LEVEL) {
		if (dlq_log_level_parse(v, &l) == -1) {
			report(errors, where, o, v,
			    "expected debug, info, warn or error");
			return -1;
		}
		*(enum dlq_log_level *)field(c, o) = l;
		return 0;
	}
	if ((why = check_str(o, v)) != NULL) {
		report(errors, where, o, v, why);
		return -1;
	}
	/* "0" turns the HTTP endpoint off */
	set_str(field(c, o), *v != '\0' && !(strcmp(o->name, "listen") == 0 &&
	    strcmp(v, "0") == 0) ? v : NULL);
	return 0;
}

static void
set_defaults(struct dlq_config *c)
{
	const struct opt *o;

	for (o = opts; o < opts + NOPTS; o++) {
		switch (o->kind) {
		case OPT_INT:
		case OPT_RATIO:
			*(int64_t *)field(c, o) = o->def;
			break;
		case OPT_BOOL:
			*(bool *)field(c, o) = o->def != 0;
			break;
		case OPT_STR:
			set_str(field(c, o), o->def_s);
			break;
		case OPT_LEVEL:
			dlq_log_level_parse(o->def_s, field(c, o));
			break;
		case OPT_LIST:
			dlq_conf_list_set(field(c, o), o->def_list);
			break;
		case OPT_TARGETS:	/* none by default */
		case OPT_RULES:
		case OPT_POLICIES:
			break;
		}
	}
}

static const char *
type_name(int t)
{
	switch (t) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:	return "an integer";
	case CONFIG_TYPE_FLOAT:	return "a number";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL:	return "a boolean";
	case CONFIG_TYPE_ARRAY:	return "an array";
	case CONFIG_TYPE_LIST:	return "a list";
	case CONFIG_TYPE_GROUP:	return "a group";
	default:		return "a setting";
	}
}




void
dlq_config_replay_policy(const struct dlq_config *c, const char *queue,
    struct dlq_replay_policy *out)
{
	const struct dlq_replay_policy *p = NULL;
	size_t i;

	for (i = 0; queue != NULL && i < c->n_replay_queues; i++)
		if (strcmp(c->replay_queues[i].queue, queue) == 0)
			p = &c->replay_queues[i];
	memset(out, 0, sizeof(*out));
	out->queue = p ? p->queue : NULL;
	out->max_age_ms = p && p->max_age_ms >= 0 ? p->max_age_ms :
	    c->replay_max_age_ms;
	out->max_replays = p && p->max_replays >= 0 ? p->max_replays :
	    c->replay_max_replays;
	out->never = p && p->has_never ? p->never : c->replay_never;
	out->has_never = true;
	out->require_owner = p && p->require_owner >= 0 ? p->require_owner :
	    c->replay_require_owner;
	out->evidence_max_age_ms = p && p->evidence_max_age_ms >= 0 ?
	    p->evidence_max_age_ms : c->replay_evidence_max_age_ms;
}

/* Checks one element of a list setting; NULL when fine. An empty one is
 * a mistake in every list (it would match every key, name no header or
 * user), and a class list must name known classes: a typo would silently
 * never match. */
static const char *
check_item(const struct opt *o, const char *v)
{
	if (*v == '\0')
		return "must not be empty";
	if (strcmp(v, "@") == 0)
		return "a group needs its name after the @";
	if ((strcmp(o->name, "never") == 0 || strcmp(o->name, "classes") ==
	    0) && !dlq_class_valid(v))
		return "unknown class (known: " DLQ_CLASS_LIST ")";
	if (strcmp(o->name, "hosts") == 0)
		return dlq_url_host_port(v, 1, NULL, 0, NULL);
	return NULL;
}

static int
read_setting(struct dlq_config *c, const struct opt *o,
    const config_setting_t *s, const char *path, struct dlq_buf *errors)
{
	char where[PATH_MAX + 16], why[192], text[64];
	int t = config_setting_type(s), i, n;
	int64_t iv;
	const char *const *tmp, *why_s;
	const char **v;
	double d;
	int rc = 0;

	dlq_conf_where(s, path, where, sizeof(where));
	switch (o->kind) {
	case OPT_INT:
		if (t == CONFIG_TYPE_STRING && dlq_confint_in_ms(o->name))
			return apply_duration(c, o, config_setting_get_string(s),
			    where, errors);
		if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
			break;
		if (!dlq_confint_get(s, path, &iv, text, sizeof(text))) {
			snprintf(why, sizeof(why), "out of range %lld..%lld",
			    (long long)o->min, (long long)o->max);
			report(errors, where, o, text, why);
			return -1;
		}
		return apply_int(c, o, iv, where, text, errors);
	case OPT_BOOL:
		if (t != CONFIG_TYPE_BOOL)
			break;
		return apply_int(c, o, config_setting_get_bool(s), where, NULL,
		    errors);
	case OPT_RATIO:		/* a fraction 0.0 .. 1.0, kept in 1/1000 */
		if (t != CONFIG_TYPE_FLOAT && t != CONFIG_TYPE_INT)
			break;
		if (t == CONFIG_TYPE_FLOAT)
			d = config_setting_get_float(s);
		else
			d = dlq_confint_get(s, path, &iv, NULL, 0) ? (double)iv :
			    2.0;	/* beyond 64 bits: out of range */
		snprintf(text, sizeof(text), "%g", d);
		if (!(d >= 0.0 && d <= 1.0)) {
			report(errors, where, o, text, "must be 0.0 .. 1.0");
			return -1;
		}
		return apply_int(c, o, (int64_t)(d * 1000.0 + 0.5), where, text,
		    errors);
	case OPT_STR:
	case OPT_LEVEL:
		if (t != CONFIG_TYPE_STRING)
			break;
		return apply_str(c, o, config_setting_get_string(s), where,
		    errors);
	case OPT_LIST:
		if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
			break;
		n = config_setting_length(s);
		if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL)
			return -1;
		for (i = 0; i < n; i++) {
			const config_setting_t *e = config_setting_get_elem(s,
			    (unsigned)i);
			if (config_setting_type(e) != CONFIG_TYPE_STRING) {
				snprintf(why, sizeof(why),
				    "element %d must be a string", i + 1);
				report(errors, where, o, NULL, why);
				rc = -1;
				break;
			}
			v[i] = config_setting_get_string(e);
			if ((why_s = check_item(o, v[i])) != NULL) {
				snprintf(why, sizeof(why), "element %d: %s", i + 1,
				    why_s);
				dlq_conf_where(e, path, where, sizeof(where));
				report(errors, where, o, v[i], why);
				rc = -1;
				break;
			}
		}
		if (rc == 0) {
			tmp = v;
			dlq_conf_list_set(field(c, o), tmp);
		}
		if (rc == 0 && o->off == OFF(redrive_queues)) {
			dlq_conf_queue_refs_drop(c, "redrive.queues");
			for (i = 0; i < n && rc == 0; i++) {
				dlq_conf_where(config_setting_get_elem(s, (unsigned)i),
				    path, where, sizeof(where));
				rc = dlq_conf_queue_ref_add(c, "redrive.queues", v[i],
				    where);
			}
		}
		free(v);
		return rc;
	case OPT_TARGETS:
		if (t != CONFIG_TYPE_LIST)
			break;
		return dlq_conf_read_targets(c, s, path, errors);
	case OPT_RULES:
		if (t != CONFIG_TYPE_LIST)
			break;
		return dlq_conf_read_rules(c, s, path, errors);
	case OPT_POLICIES:
		if (t != CONFIG_TYPE_LIST)
			break;
		return dlq_conf_read_policies(c, s, path, errors);
	}
	snprintf(why, sizeof(why), "must be %s, not %s%s",
	    type_name(o->kind == OPT_INT ? CONFIG_TYPE_INT :
	    o->kind == OPT_RATIO ? CONFIG_TYPE_FLOAT :
	    o->kind == OPT_BOOL ? CONFIG_TYPE_BOOL :
	    o->kind == OPT_LIST ? CONFIG_TYPE_ARRAY :
	    o->kind == OPT_TARGETS || o->kind == OPT_RULES ||
	    o->kind == OPT_POLICIES ? CONFIG_TYPE_LIST :
	    CONFIG_TYPE_STRING),
	    type_name(t), t == CONFIG_TYPE_STRING ? ms_hint(o) : "");
	report(errors, where, o, NULL, why);
	return -1;
}

static bool
known(const char *group, const char *name)
{
	const struct opt *o;

	for (o = opts; o < opts + NOPTS; o++)
		if (strcmp(o->group, group) == 0 &&
		    (name == NULL || strcmp(o->name, name) == 0))
			return true;
	return false;
}

/* Appends " (did you mean 'G.N'?)" for the known setting nearest to the
 * unknown `group`.`name`: in the same group, else in another (the same
 * name: it belongs there). `name` NULL: `group` is an unknown group, or
 * a setting outside any group. Nothing when none is near. */
static void
suggest_setting(struct dlq_buf *errors, const char *group, const char *name)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;
	const struct opt *o, *best = NULL;
	const char *typed = name != NULL ? name : group;
	int pass;

	if (name == NULL)
		for (o = opts; o < opts + NOPTS; o++)
			if (dlq_suggest_consider(&s, group, o->group,
			    strlen(o->group)))
				best = o;
	if (best != NULL) {
		dlq_buf_printf(errors, " (did you mean '%s'?)", best->group);
		return;
	}
	/* the same group first, then the others */
	for (pass = 0; pass < 2 && best == NULL; pass++)
		for (o = opts; o < opts + NOPTS; o++)
			if ((name != NULL && strcmp(o->group, group) == 0) ==
			    (pass == 0) && dlq_suggest_consider(&s, typed,
			    o->name, strlen(o->name)))
				best = o;
	if (best != NULL)
		dlq_buf_printf(errors, " (did you mean '%s.%s'?)", best->group,
		    best->name);
}

/* Every setting in the file must be one we know. */
static int
check_unknown(const config_t *cf, const char *path, struct dlq_buf *errors)
{
	const config_setting_t *root = config_root_setting(cf), *g, *s;
	char where[PATH_MAX + 16];
	int i, j, rc = 0;

	for (i = 0; (g = config_setting_get_elem(root, (unsigned)i)); i++) {
		dlq_conf_where(g, path, where, sizeof(where));
		if (!known(config_setting_name(g), NULL)) {
			dlq_buf_printf(errors, "%s: unknown setting '%s'",
			    where, config_setting_name(g));
			suggest_setting(errors, config_setting_name(g), NULL);
			dlq_buf_adds(errors, "\n");
			rc = -1;
			continue;
		}
		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			dlq_buf_printf(errors, "%s: '%s' must be a group { ... }\n",
			    where, config_setting_name(g));
			rc = -1;
			continue;
		}
		for (j = 0; (s = config_setting_get_elem(g, (unsigned)j)); j++) {
			if (known(config_setting_name(g), config_setting_name(s)))
				continue;
			dlq_conf_where(s, path, where, sizeof(where));
			dlq_buf_printf(errors, "%s: unknown setting '%s.%s'",
			    where, config_setting_name(g),
			    config_setting_name(s));
			suggest_setting(errors, config_setting_name(g),
			    config_setting_name(s));
			dlq_buf_adds(errors, "\n");
			rc = -1;
		}
	}
	return rc;
}

FILE *
dlq_config_fopen(const char *path, struct dlq_buf *errors)
{
	struct stat st;
	unsigned char bom[3];
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL) {
		dlq_buf_printf(errors, "%s: cannot open: %s\n", path,
		    strerror(errno));
		return NULL;
	}
	/* libconfig's scanner exits the process on a read error */
	if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		dlq_buf_printf(errors, "%s: cannot read: it is a directory\n",
		    path);
		fclose(fp);
		return NULL;
	}
	/* a UTF-8 byte order mark, as some editors save a file, is not
	 * part of the text: libconfig would call line 1 a syntax error */
	if (fread(bom, 1, sizeof(bom), fp) != sizeof(bom) ||
	    memcmp(bom, "\xef\xbb\xbf", sizeof(bom)) != 0)
		rewind(fp);
	return fp;
}

void
dlq_config_say_unread(const config_t *cf, const char *path,
    struct dlq_buf *errors)
{
	const char *text = config_error_text(cf) ? config_error_text(cf) :
	    "cannot be read";

	/* libconfig says no more than "syntax error": what it expects is
	 * not what YAML or INI habits write */
	dlq_buf_printf(errors, "%s:%d: %s%s\n", path, config_error_line(cf),
	    text, strcmp(text, "syntax error") != 0 ? "" : " (a setting "
	    "is name = value; text in \"double quotes\", a group in { }, a "
	    "list in ( ))");
}

/* Where each file setting got its value: FILE:LINE or the variable. */
struct file_places {
	char	*at[NOPTS];
};

static bool
names_file(const struct opt *o)
{
	return is_file(o) || (strcmp(o->group, "topology") == 0 &&
	    strcmp(o->name, "file") == 0);
}

static void
place_file(struct file_places *places, const struct opt *o,
    const char *where)
{
	free(places->at[o - opts]);
	places->at[o - opts] = strdup(where);
}

/* The files named (topology, TLS), once the file and the environment
 * have said their last word: a path in the file that a variable
 * replaces is not looked at. Each one that cannot be read is refused
 * where it was set, not at the first connection or the topology load. */
static int
check_files(struct dlq_config *c, struct file_places *places,
    struct dlq_buf *errors)
{
	const struct opt *o;
	char key[128], *file, *at;
	int rc = 0;

	for (o = opts; o < opts + NOPTS; o++) {
		if ((at = places->at[o - opts]) == NULL)
			continue;
		file = *(char **)field(c, o);
		if (file != NULL && dlq_conf_check_readable(key_of(o, key,
		    sizeof(key)), file, at, errors) == -1)
			rc = -1;
		free(at);
	}
	return rc;
}

static int
load_file(struct dlq_config *c, const char *path, struct file_places *places,
    struct dlq_buf *errors)
{
	config_t cf;
	const config_setting_t *s;
	const struct opt *o;
	char key[128];
	FILE *fp;
	int rc = 0;

	if ((fp = dlq_config_fopen(path, errors)) == NULL)
		return -1;
	config_init(&cf);
	if (config_read(&cf, fp) != CONFIG_TRUE) {
		dlq_config_say_unread(&cf, config_error_file(&cf) ?
		    config_error_file(&cf) : path, errors);
		rc = -1;
		goto out;
	}
	if (check_unknown(&cf, path, errors) == -1)
		rc = -1;
	for (o = opts; o < opts + NOPTS; o++) {
		if ((s = config_lookup(&cf, key_of(o, key, sizeof(key)))) ==
		    NULL)
			continue;
		if (read_setting(c, o, s, path, errors) == -1)
			rc = -1;
		else if (names_file(o)) {
			char where[PATH_MAX + 16];
			dlq_conf_resolve_relative(field(c, o), path);
			dlq_conf_where(s, path, where, sizeof(where));
			place_file(places, o, where);
		}
	}
out:
	config_destroy(&cf);
	fclose(fp);
	return rc;
}

#define ENV_FILE_MAX	(64 * 1024)

/* The value of `var` from the file `file` names (VAR_FILE, the way Docker
 * and Kubernetes hand out secrets): its trailing newlines dropped, into
 * `out` (size ENV_FILE_MAX + 1). Returns 0, or -1 with the reason in
 * `errors` (never the content: it is most often a secret). */
static int
read_env_file(const char *var, const char *file, char *out,
    struct dlq_buf *errors)
{
	const char *why = NULL;
	struct stat st;
	size_t len = 0;
	ssize_t got;
	int fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
		why = strerror(errno);
	else if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_size > ENV_FILE_MAX)
		why = "larger than 64 KiB";
	else if ((got = read(fd, out, ENV_FILE_MAX)) < 0)
		why = strerror(errno);
	else
		len = (size_t)got <= ENV_FILE_MAX ? (size_t)got : ENV_FILE_MAX;
	if (fd != -1)
		close(fd);
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
		len--;
	out[len] = '\0';
	if (why == NULL && len == 0)
		why = "empty";
	else if (why == NULL && strlen(out) != len)
		why = "holds a NUL byte";
	if (why == NULL)
		return 0;
	dlq_buf_printf(errors, "%s: '", var);
	dlq_term_add(errors, file);
	dlq_buf_printf(errors, "': %s\n", why);
	return -1;
}

/* One variable's value: VAR, or the content of the file VAR_FILE names;
 * `where` gets the name it came from. NULL: neither is set (an empty
 * variable counts as unset); `bad` is set when it could not be read. */
static const char *
env_value(const struct opt *o, char *buf, char *where, size_t wn,
    bool *bad, struct dlq_buf *errors)
{
	const char *v = getenv(o->env), *file;

	snprintf(where, wn, "%s_FILE", o->env);
	file = getenv(where);
	*bad = false;
	if (file == NULL || *file == '\0') {
		snprintf(where, wn, "%s", o->env);
		return v == NULL || *v == '\0' ? NULL : v;
	}
	if (v != NULL && *v != '\0') {
		dlq_buf_printf(errors, "%s and %s_FILE are both set: one of them "
		    "must go\n", o->env, o->env);
		*bad = true;
		return NULL;
	}
	if (read_env_file(where, file, buf, errors) == -1) {
		*bad = true;
		return NULL;
	}
	return buf;
}

/* A list from a variable: its elements separated by commas (blanks
 * around them dropped), each checked as in the file. */
static int
env_list(struct dlq_config *c, const struct opt *o, const char *v,
    const char *where, struct dlq_buf *errors)
{
	char *copy = strdup(v), *e, *next, why[192];
	const char **items, *why_s;
	size_t n = 1, k = 0;
	const char *p;
	int rc = 0;

	for (p = v; *p != '\0'; p++)
		n += *p == ',';
	if (copy == NULL || (items = calloc(n + 1, sizeof(*items))) == NULL) {
		free(copy);
		return -1;
	}
	for (e = copy; e != NULL; e = next) {
		if ((next = strchr(e, ',')) != NULL)
			*next++ = '\0';
		while (*e == ' ' || *e == '\t')
			e++;
		for (p = e + strlen(e); p > e && (p[-1] == ' ' || p[-1] == '\t');
		    p--)
			;
		e[p - e] = '\0';
		if ((why_s = check_item(o, e)) != NULL) {
			snprintf(why, sizeof(why), "element %zu: %s", k + 1, why_s);
			report(errors, where, o, e, why);
			rc = -1;
			break;
		}
		items[k++] = e;
	}
	if (rc == 0)
		dlq_conf_list_set(field(c, o), items);
	free(items);
	free(copy);
	return rc;
}

static int
load_env(struct dlq_config *c, struct file_places *places,
    struct dlq_buf *errors)
{
	const struct opt *o;
	const char *v;
	char *end, *buf, where[96], why[96];
	long long n;
	bool bad;
	int rc = 0;

	if ((buf = malloc(ENV_FILE_MAX + 1)) == NULL)
		return -1;
	for (o = opts; o < opts + NOPTS; o++) {
		if (o->env == NULL)
			continue;
		v = env_value(o, buf, where, sizeof(where), &bad, errors);
		if (bad)
			rc = -1;
		if (v == NULL)
			continue;
		if (o->kind == OPT_LIST) {
			if (env_list(c, o, v, where, errors) == -1)
				rc = -1;
			continue;
		}
		if (o->kind != OPT_INT) {
			if (apply_str(c, o, v, where, errors) == -1)
				rc = -1;
			else if (names_file(o))
				place_file(places, o, where);
			continue;
		}
		/* digits, maybe after a minus, as in the file: strtoll
		 * alone would take " 5" and "+5". Too many digits come back
		 * clamped, and are out of range below. */
		n = strtoll(v, &end, 10);
		if ((!isdigit((unsigned char)v[v[0] == '-']) || *end != '\0') &&
		    dlq_confint_in_ms(o->name)) {	/* "5m", "30s" */
			if (apply_duration(c, o, v, where, errors) == -1)
				rc = -1;
		} else if (!isdigit((unsigned char)v[v[0] == '-']) ||
		    *end != '\0') {
			snprintf(why, sizeof(why), "not an integer%s",
			    ms_hint(o));
			report(errors, where, o, v, why);
			rc = -1;
		} else if (apply_int(c, o, n, where, v, errors) == -1)
			rc = -1;
	}
	explicit_bzero(buf, ENV_FILE_MAX + 1);
	free(buf);
	return rc;
}

/* The env / webhook_url target first, then alert.targets; AUTO resolved. */
static int
build_targets(struct dlq_config *c)
{
	size_t i, n = 0;
	enum dlq_alert_format f = DLQ_FORMAT_AUTO;

	c->targets = calloc(c->n_extra_targets + 2, sizeof(*c->targets));
	if (c->targets == NULL)
		return -1;
	if (c->webhook_url != NULL) {
		dlq_alert_format_parse(c->webhook_format, &f);
		c->targets[n].url = strdup(c->webhook_url);
		if (c->webhook_ca_cert != NULL)
			c->targets[n].ca_cert = strdup(c->webhook_ca_cert);
		c->targets[n++].format = f;
	}
	for (i = 0; i < c->n_extra_targets; i++) {
		c->targets[n].url = strdup(c->extra_targets[i].url);
		if (c->extra_targets[i].ca_cert != NULL)
			c->targets[n].ca_cert =
			    strdup(c->extra_targets[i].ca_cert);
		c->targets[n++].format = c->extra_targets[i].format;
	}
	for (i = 0; i < n; i++)
		if (c->targets[i].format == DLQ_FORMAT_AUTO)
			c->targets[i].format =
			    dlq_alert_format_detect(c->targets[i].url);
	c->n_targets = n;
	return 0;
}

/* A target whose format the host did not tell (Microsoft Teams) would
 * lose every digest without a word: a Teams workflow answers 202 to any
 * body and then fails on one that is not an Adaptive Card. */
static int
check_targets_formats(const struct dlq_config *c, const char *path,
    struct dlq_buf *errors)
{
	char host[256];
	size_t i;
	int rc = 0;

	for (i = 0; i < c->n_targets; i++)
		if (c->targets[i].format == DLQ_FORMAT_AUTO) {
			dlq_buf_printf(errors, "%s: alert: webhook target %zu "
			    "(host %s; the first is alert.webhook_url or "
			    "DLQ_ALERT_WEBHOOK_URL when set) is Microsoft Teams, "
			    "whose workflows take Adaptive Cards only: they would "
			    "answer 202 to a digest and drop it. Set its format "
			    "(\"plain\" posts {\"text\": ...}) only if your "
			    "workflow reads that\n", path ? path : "(defaults)",
			    i + 1, dlq_url_host(c->targets[i].url, host,
			    sizeof(host)));
			rc = -1;
		}
	return rc;
}

/* Two targets with one URL would post every digest twice to the same
 * channel: most often the env var repeating a target of the file. */
static int
check_targets_differ(const struct dlq_config *c, const char *path,
    struct dlq_buf *errors)
{
	char host[256];
	size_t i, j;

	for (i = 1; i < c->n_targets; i++)
		for (j = 0; j < i; j++)
			if (strcmp(c->targets[i].url, c->targets[j].url) == 0) {
				dlq_buf_printf(errors, "%s: alert: webhook targets "
				    "%zu and %zu have the same URL (host %s; the "
				    "first is alert.webhook_url or "
				    "DLQ_ALERT_WEBHOOK_URL when set): each digest "
				    "would be posted there twice\n",
				    path ? path : "(defaults)", j + 1, i + 1,
				    dlq_url_host(c->targets[i].url, host,
				    sizeof(host)));
				return -1;
			}
	return 0;
}

int
dlq_config_load(struct dlq_config *c, const char *path, struct dlq_buf *errors)
{
	struct file_places files = { { NULL } };
	const char *why;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	set_defaults(c);
	if (path != NULL) {
		c->path = strdup(path);
		if (load_file(c, path, &files, errors) == -1)
			rc = -1;
	}
	if (load_env(c, &files, errors) == -1)
		rc = -1;
	if (check_files(c, &files, errors) == -1)
		rc = -1;
	if (c->reconnect_min_ms > c->reconnect_max_ms) {
		dlq_buf_printf(errors, "%s: rabbitmq.reconnect_min_ms (%lld) "
		    "must not exceed rabbitmq.reconnect_max_ms (%lld)\n",
		    path ? path : "(defaults)", (long long)c->reconnect_min_ms,
		    (long long)c->reconnect_max_ms);
		rc = -1;
	}
	if (c->hosts.n > 16) {
		dlq_buf_printf(errors, "%s: rabbitmq.hosts: at most 16 nodes, "
		    "not %zu\n", path ? path : "(defaults)", c->hosts.n);
		rc = -1;
	}
	if ((c->tls_cert == NULL) != (c->tls_key == NULL)) {
		dlq_buf_printf(errors, "%s: rabbitmq.tls_cert and rabbitmq."
		    "tls_key go together (a client certificate and its key)\n",
		    path ? path : "(defaults)");
		rc = -1;
	}
	if (rc == 0 && (build_targets(c) == -1 ||
	    check_targets_formats(c, path, errors) == -1 ||
	    check_targets_differ(c, path, errors) == -1))
		rc = -1;
	if (rc == 0 && dlq_url_parse_amqp(c->url, &c->broker, &why) == -1) {
		dlq_buf_printf(errors, "rabbitmq.url: %s\n", why);
		rc = -1;
	}
	if (rc == 0 && strcmp(c->auth, "external") == 0 &&
	    (!c->broker.tls || c->tls_cert == NULL)) {
		dlq_buf_printf(errors, "%s: rabbitmq.auth = \"external\" needs "
		    "an amqps:// URL and rabbitmq.tls_cert (the broker takes "
		    "the user from the client certificate)\n",
		    path ? path : "(defaults)");
		rc = -1;
	}
	if (c->url != NULL)
		c->url_safe = dlq_url_mask(c->url);
	return rc;
}


void
dlq_broker_release(struct dlq_broker *b)
{
	if (b == NULL)
		return;
	free(b->host);
	free(b->vhost);
	free(b->user);
	if (b->password != NULL)
		explicit_bzero(b->password, strlen(b->password));
	free(b->password);
	memset(b, 0, sizeof(*b));
}

size_t
dlq_config_mask_keys_left_out(const struct dlq_config *c,
    struct dlq_buf *out)
{
	const char *const *d;
	size_t i, n = 0;

	for (d = default_mask_keys; *d != NULL; d++) {
		for (i = 0; i < c->mask_keys.n; i++)
			if (c->mask_keys.v[i][0] != '\0' &&
			    strcasestr(*d, c->mask_keys.v[i]) != NULL)
				break;
		if (i < c->mask_keys.n)
			continue;
		dlq_buf_adds(out, n++ > 0 ? ", " : "");
		dlq_buf_adds(out, *d);
	}
	return n;
}

void
dlq_config_release(struct dlq_config *c)
{
	const struct opt *o;
	size_t i;

	if (c == NULL)
		return;
	for (o = opts; o < opts + NOPTS; o++) {
		if (o->kind == OPT_STR) {
			char **p = field(c, o);
			if (*p != NULL && is_secret(o))
				explicit_bzero(*p, strlen(*p));
			free(*p);
		} else if (o->kind == OPT_LIST)
			dlq_strlist_release(field(c, o));
	}
	dlq_conf_targets_release(c->extra_targets, c->n_extra_targets);
	dlq_conf_rules_release(c->rules, c->n_rules);
	dlq_conf_policies_release(c->replay_queues, c->n_replay_queues);
	for (i = 0; i < c->n_queue_refs; i++) {
		free(c->queue_refs[i].name);
		free(c->queue_refs[i].where);
	}
	free(c->queue_refs);
	dlq_conf_targets_release(c->targets, c->n_targets);
	free(c->path);
	free(c->url_safe);
	dlq_broker_release(&c->broker);
	memset(c, 0, sizeof(*c));
}
