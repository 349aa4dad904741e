/* settings.h - the configuration's values, as every part of both
 * programs reads them (struct dlq_config and the lists it holds), the
 * error classes, and string lists. config.c fills them. */
#ifndef DLQ_SETTINGS_H
#define DLQ_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alertformat.h"
#include "buf.h"
#include "log.h"
#include "url.h"

struct dlq_strlist {
	char	**v;
	size_t	  n;
};

struct dlq_target {
	char			*url;		/* secret: log dlq_url_host() only */
	enum dlq_alert_format	 format;	/* never AUTO after load */
	char			*ca_cert;	/* PEM CAs; NULL: the system's */
};

/* classify.rules: one configured classification rule. */
struct dlq_rule_cfg {
	char			*match;		/* regex on the error text */
	char			*reason;	/* death reason, exact */
	char			*queue;		/* regex on the source queue */
	char			*class;
	char			*hint;
	char			*link;
};

/* replay: the eligibility policy, global or for one queue (replay.queues:
 * fields left out inherit the global ones). */
struct dlq_replay_policy {
	char			*queue;		/* NULL: the global policy */
	int64_t			 max_age_ms;	/* 0: any age; -1: inherit */
	int64_t			 max_replays;	/* -1: inherit */
	struct dlq_strlist	 never;		/* classes; has_never: set */
	bool			 has_never;
	int			 require_owner;	/* 0, 1; -1: inherit */
	int64_t			 evidence_max_age_ms;	/* 0: no evidence
						   needed; -1: inherit */
};

/* A work queue the file names (replay.queues, redrive.queues) and where:
 * checked against the topology once that is loaded (dlq_cli_load). */
struct dlq_queue_ref {
	char			*name;
	char			*where;		/* file:line */
	const char		*key;		/* "replay.queues", ... */
};

struct dlq_config {
	char			*path;		/* file read, or NULL */

	/* rabbitmq */
	char			*url;		/* secret: holds the password */
	char			*url_safe;	/* url with the password masked */
	struct dlq_broker	 broker;
	struct dlq_strlist	 hosts;		/* more nodes: HOST[:PORT] */
	int64_t			 heartbeat_s;
	int64_t			 prefetch;
	int64_t			 reconnect_min_ms;
	int64_t			 reconnect_max_ms;
	int64_t			 shared_check_ms;	/* 0: at start only */
	char			*management_url;	/* secret; NULL: not asked */
	char			*tls_ca_cert;	/* NULL: system default */
	char			*tls_cert;	/* client certificate (chain) */
	char			*tls_key;	/* its private key */
	char			*auth;		/* "plain" or "external" */
	bool			 tls_verify;

	/* topology */
	char			*topology_file;	/* NULL: the embedded line topology */
	char			*dlq_suffix;	/* NULL: the topology file's */
	bool			 reassert;	/* a DLQ gone: assert again */

	/* alert */
	char			*webhook_url;	/* secret; NULL: log only */
	char			*webhook_format;	/* of webhook_url */
	char			*webhook_ca_cert;	/* of webhook_url */
	struct dlq_target	*targets;	/* webhook_url first, then */
	size_t			 n_targets;	/* alert.targets; 0: log only */
	struct dlq_target	*extra_targets;	/* alert.targets as read */
	size_t			 n_extra_targets;
	int64_t			 cooldown_ms;
	int64_t			 max_chars;
	int64_t			 max_groups;
	int64_t			 alert_timeout_ms;

	/* log */
	enum dlq_log_level	 log_level;
	int64_t			 payload_max_bytes;
	struct dlq_strlist	 mask_keys;
	bool			 mask_emails;
	int64_t			 mask_digits_min;

	/* deadletter */
	struct dlq_strlist	 error_headers;

	/* archive */
	char			*archive_path;
	char			*archive_url;	/* PostgreSQL; NULL: SQLite */
	int64_t			 busy_timeout_ms;
	int64_t			 retention_days;	/* 0: keep payloads */
	int64_t			 audit_retention_days;	/* 0: keep the audit */
	int64_t			 batch_max;	/* deliveries per commit */

	/* http */
	char			*http_listen;	/* host:port; NULL: off */

	/* console (the web console and API on the HTTP listener) */
	char			*console_tokens_file;	/* NULL: no users */
	char			*console_public_url;	/* for digest links */
	int64_t			 console_session_ms;	/* a login lasts */
	struct dlq_strlist	 console_proxies;	/* trusted addresses */
	char			*console_proxy_header;	/* their user header */

	/* thresholds (alert.*) */
	int64_t			 threshold;		/* unresolved; 0: off */
	int64_t			 threshold_max_age_ms;	/* oldest; 0: off */
	int64_t			 threshold_cooldown_ms;
	int64_t			 threshold_check_ms;	/* how often */

	/* control */
	char			*control_socket;
	int64_t			 control_idle_ms;	/* for a whole request */
	struct dlq_strlist	 viewers;	/* "user" or "@group" */
	struct dlq_strlist	 operators;
	struct dlq_strlist	 admins;

	/* classify */
	struct dlq_rule_cfg	*rules;
	size_t			 n_rules;

	/* replay */
	int64_t			 replay_max_age_ms;
	int64_t			 replay_max_replays;
	struct dlq_strlist	 replay_never;
	bool			 replay_require_owner;
	int64_t			 replay_rate;		/* default --rate */
	int64_t			 replay_limit;		/* default --limit */
	struct dlq_replay_policy *replay_queues;
	size_t			 n_replay_queues;
	int64_t			 replay_evidence_max_age_ms;	/* 0: none */

	/* cases */
	int64_t			 owner_sla_ms;	/* open without owner; 0: off */

	/* redrive: automatic replay by the worker; off unless queues */
	struct dlq_strlist	 redrive_queues;	/* work queues */
	struct dlq_strlist	 redrive_classes;
	int64_t			 redrive_min_age_ms;
	int64_t			 redrive_interval_ms;
	int64_t			 redrive_batch;
	int64_t			 redrive_max_cycles;
	int64_t			 redrive_trip_permille;	/* trip_ratio x 1000 */
	int64_t			 redrive_watch_ms;

	struct dlq_queue_ref	*queue_refs;
	size_t			 n_queue_refs;
};

/* The error classes, as messages name them (the list NULL-ended). */
#define DLQ_CLASS_LIST	"transient, rate_limited, validation, " \
	"configuration, contract, security, expired, manual, unknown"
extern const char *const dlq_class_names[];

/* True for a class of DLQ_CLASS_LIST. */
bool	dlq_class_valid(const char *);
/* What to do next about a dead letter of `class`, in a few words (a
 * digest line's "next:"); NULL for no class. */
const char *dlq_class_next_step(const char *class);

void	dlq_strlist_release(struct dlq_strlist *);
bool	dlq_strlist_contains(const struct dlq_strlist *, const char *);
/* Appends the list as a JSON array of strings. */
void	dlq_strlist_json(const struct dlq_strlist *, struct dlq_buf *out);

#endif
