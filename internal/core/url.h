/* url.h - the configuration's URLs: parsed, checked, and shown safely. */
#ifndef DLQ_URL_H
#define DLQ_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "alertformat.h"

struct dlq_broker {
	char	*host;
	int	 port;
	char	*vhost;
	char	*user;
	char	*password;	/* secret: never log */
	bool	 tls;
};

/* Parses an amqp:// or amqps:// URL into `b` (strings copied). An empty
 * vhost means "/". Returns 0, or -1 with the reason in `why` (what is
 * wrong with it: a port, an unencoded '/', '?', '#', '@' or '%'). */
int	dlq_url_parse_amqp(const char *url, struct dlq_broker *b,
	    const char **why);

/* Checks a rabbitmq.hosts entry: HOST, HOST:PORT or [IPv6]:PORT. NULL
 * when fine (`host`, `port` filled when not NULL; `default_port` when it
 * names none), else the reason. */
const char *dlq_url_host_port(const char *item, int default_port,
	    char *host, size_t hn, int *port);

/* Parses a listen address into `ss`: "HOST:PORT", HOST an
 * IPv4 address or localhost (127.0.0.1), or "[ADDR]:PORT", ADDR an IPv6
 * address ([::]: every interface, IPv4 ones too); its family says
 * which. NULL when fine, else the reason. */
const char *dlq_url_listen(const char *v, struct sockaddr_storage *ss);

/* Checks a webhook or management http(s):// URL as libcurl will read it:
 * NULL when fine, else the reason, which never quotes the URL (its path
 * and query are secrets). */
const char *dlq_url_http_problem(const char *url);

/* Checks archive.url, a PostgreSQL connection string as libpq reads it:
 * a postgresql:// (or postgres://) URI or libpq's keywords (host=...
 * dbname=...). NULL when fine, else the reason, which never quotes it
 * (a password may be in it). libpq itself reads it at the worker's
 * start; this catches what is plainly no connection string. */
const char *dlq_url_postgres_problem(const char *v);

/* Copy of `url` with the password replaced by "***"; caller frees. */
char	*dlq_url_mask(const char *url);

/* Writes the host of an http(s)/amqp URL (no user, port or path) to
 * `out`: what logs may show of a secret URL. */
const char *dlq_url_host(const char *url, char *out, size_t n);

/* Whether an http(s)/amqp URL carries its own user (and maybe password)
 * before its host: scheme://user[:password]@host/... */
bool	dlq_url_has_userinfo(const char *url);

/* The format a webhook URL's host takes: slack, google_chat, discord
 * (slack for Discord's URL ending in /slack), plain for a host not
 * known; AUTO for Microsoft Teams, whose workflows take none of them. */
enum dlq_alert_format dlq_alert_format_detect(const char *url);

#endif
