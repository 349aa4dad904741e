/* url.c - the URLs of the configuration, read before they are used:
 * the broker's amqp(s):// URL (through rabbitmq-c's parser, with the
 * reason when it refuses one), the other cluster nodes' HOST[:PORT],
 * and the webhook and management http(s):// URLs (as libcurl will read
 * them). Also what logs may show of them: the host, a masked password. */
#include "url.h"

#include <amqp.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "termtext.h"

/* What libcurl will make of an http(s) URL, checked now rather than at
 * the first digest, hours later: a port typo, a broken IPv6 literal, or
 * a chat webhook cut off after its host (its path is its secret). */
static const char *
check_url_parts(const char *v)
{
	CURLU *u = curl_url();
	CURLUcode rc;
	char *port = NULL, *path = NULL;
	const char *why = NULL;
	enum dlq_alert_format f;

	if (u == NULL)
		return NULL;	/* out of memory: curl says it at the send */
	rc = curl_url_set(u, CURLUPART_URL, v, 0);
	if (rc == CURLUE_BAD_PORT_NUMBER)
		why = "has a port that is not a number 1..65535";
	else if (rc == CURLUE_BAD_IPV6)
		why = "has a bad IPv6 address (written like "
		    "http://[::1]:8080/path)";
	else if (rc != CURLUE_OK)
		why = "is not a URL libcurl can read";
	else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
	    strcmp(port, "0") == 0)
		why = "has a port that is not a number 1..65535";
	else if ((f = dlq_alert_format_detect(v)) != DLQ_FORMAT_PLAIN &&
	    f != DLQ_FORMAT_AUTO &&
	    curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK &&
	    strcmp(path, "/") == 0)
		why = "has no path: a Slack, Google Chat or Discord webhook "
		    "URL is the whole address the chat gave (https://hooks."
		    "slack.com/services/...), cut short here";
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return why;
}

/* Checks a webhook or management URL; NULL when fine, else the reason.
 * A value pasted from a file or a secret often ends in a newline: curl
 * would refuse it at the first digest, hours later. */
const char *
dlq_url_http_problem(const char *v)
{
	size_t scheme = strncmp(v, "http://", 7) == 0 ? 7 :
	    strncmp(v, "https://", 8) == 0 ? 8 : 0;

	if (scheme == 0)
		return "must start with http:// or https://";
	if (dlq_term_has_control(v, true))
		return "must not contain spaces or control characters (a "
		    "trailing newline?)";
	if (v[scheme] == '\0' || v[scheme] == '/' || v[scheme] == ':')
		return "has no host";
	return check_url_parts(v);
}

const char *
dlq_url_postgres_problem(const char *v)
{
	if (*v == '\0')
		return "must not be empty (leave the setting out for the SQLite "
		    "archive at archive.path)";
	if (dlq_term_has_control(v, false))
		return "must not contain control characters (a trailing "
		    "newline?)";
	if (strncmp(v, "postgresql://", 13) == 0 ||
	    strncmp(v, "postgres://", 11) == 0)
		return NULL;
	if (strstr(v, "://") != NULL)
		return "expected a postgresql:// URL (the archive is "
		    "PostgreSQL's or, without archive.url, SQLite's)";
	if (strchr(v, '=') == NULL)
		return "expected postgresql://user@host:port/dbname or libpq's "
		    "keywords (host=... dbname=...)";
	return NULL;
}

const char *
dlq_url_host_port(const char *item, int default_port, char *host,
    size_t hn, int *port)
{
	const char *end = item + strlen(item), *colon, *h = item;
	size_t len;
	char *stop;
	long p = default_port;

	if (strpbrk(item, "/@?#") != NULL)
		return "expected HOST, HOST:PORT or [IPv6]:PORT (a host name "
		    "or address, no user or path: they come from rabbitmq.url)";
	if (*item == '[') {			/* [IPv6]:port */
		if ((end = strchr(item, ']')) == NULL)
			return "expected HOST, HOST:PORT or [IPv6]:PORT";
		h = item + 1;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] != '\0' && colon == NULL)
			return "expected HOST, HOST:PORT or [IPv6]:PORT";
	} else if ((colon = strchr(item, ':')) != NULL)
		end = colon;
	len = (size_t)(end - h);
	if (len == 0 || len > 253 || dlq_term_has_control(h, true))
		return "expected HOST, HOST:PORT or [IPv6]:PORT";
	if (colon != NULL) {
		errno = 0;
		p = strtol(colon + 1, &stop, 10);
		if (colon[1] < '0' || colon[1] > '9' || *stop != '\0' ||
		    errno != 0 || p < 1 || p > 65535)
			return "the port must be a number 1..65535";
	}
	if (host != NULL)
		snprintf(host, hn, "%.*s", (int)len, h);
	if (port != NULL)
		*port = (int)p;
	return NULL;
}

#define LISTEN_FORM	"expected HOST:PORT (e.g. 127.0.0.1:9464), " \
	"[IPv6]:PORT (e.g. [::1]:9464) or 0"
#define NOT_IPV4	"HOST must be an IPv4 address or localhost, or [IPv6] " \
	"(e.g. 0.0.0.0:9464 or [::]:9464 for every interface)"
#define NOT_IPV6	"inside [...] an IPv6 address (e.g. [::] for every " \
	"interface, [::1] for this machine only)"

const char *
dlq_url_listen(const char *v, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *h = v, *end, *colon;
	char host[INET6_ADDRSTRLEN], *stop;
	long port;

	if (*v == '[') {			/* [IPv6]:port */
		if ((end = strchr(v, ']')) == NULL || end[1] != ':')
			return LISTEN_FORM;
		h = v + 1;
		colon = end + 1;
	} else if ((colon = strrchr(v, ':')) == NULL)
		return LISTEN_FORM;
	else
		end = colon;
	if (end == h)
		return LISTEN_FORM;
	errno = 0;
	port = strtol(colon + 1, &stop, 10);
	if (colon[1] < '0' || colon[1] > '9' || *stop != '\0' || errno != 0 ||
	    port < 1 || port > 65535)
		return "the port must be a number 1..65535";
	if ((size_t)(end - h) >= sizeof(host))
		return *v == '[' ? NOT_IPV6 : NOT_IPV4;
	snprintf(host, sizeof(host), "%.*s", (int)(end - h), h);
	memset(ss, 0, sizeof(*ss));
	if (*v == '[') {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? NULL :
		    NOT_IPV6;
	}
	if (strchr(host, ':') != NULL)
		return "an IPv6 address goes in brackets: [ADDR]:PORT (e.g. "
		    "[::]:9464)";
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? NULL : NOT_IPV4;
}

/* What is wrong with an amqp[s]:// URL rabbitmq-c would not parse. */
static const char *
url_problem(const char *url)
{
	const char *auth = strstr(url, "://") + 3, *end, *host, *colon, *p;
	char *port_end;
	long port;

	end = auth + strcspn(auth, "/?#");
	/* rabbitmq-c takes no '@' in a vhost: the user info went on; and
	 * one '@' ends it */
	p = memchr(auth, '@', (size_t)(end - auth));
	if (strchr(end, '@') != NULL || (p != NULL && memchr(p + 1, '@',
	    (size_t)(end - p - 1)) != NULL))
		return "a '/', '?', '#' or '@' in the user name or password "
		    "must be percent-encoded (%2F, %3F, %23, %40)";
	for (p = strchr(auth, '%'); p != NULL; p = strchr(p + 1, '%'))
		if (!isxdigit((unsigned char)p[1]) ||
		    !isxdigit((unsigned char)p[2]))
			return "a '%' must start a percent-encoded byte (%25 for "
			    "'%' itself)";
	if (*end != '\0' && end[strcspn(end, "?#")] != '\0')
		return "query parameters are not read (set rabbitmq.heartbeat "
		    "and the rabbitmq.tls_* settings instead); a '?' or '#' in "
		    "the vhost must be percent-encoded (%3F, %23)";
	if (*end == '/' && strchr(end + 1, '/') != NULL)
		return "a '/' in the vhost must be percent-encoded (%2F; the "
		    "vhost / is .../%2F)";
	host = memrchr(auth, '@', (size_t)(end - auth));
	host = host != NULL ? host + 1 : auth;
	if (*host == '[' && (host = memchr(host, ']', (size_t)(end - host))) ==
	    NULL)
		return "an IPv6 address needs its closing ']'";
	if ((colon = memchr(host, ':', (size_t)(end - host))) != NULL &&
	    (!isdigit((unsigned char)colon[1]) || (port = strtol(colon + 1,
	    &port_end, 10)) < 1 || port > 65535 || port_end != end))
		return "the port must be a number 1..65535";
	return "malformed URL (expected amqp[s]://user:password@host:port/vhost)";
}

int
dlq_url_parse_amqp(const char *url, struct dlq_broker *b, const char **why)
{
	struct amqp_connection_info ci;
	char *copy;

	memset(b, 0, sizeof(*b));
	if (strncmp(url, "amqp://", 7) != 0 && strncmp(url, "amqps://", 8) != 0) {
		*why = "must start with amqp:// or amqps://";
		return -1;
	}
	if (dlq_term_has_control(url, true)) {
		*why = "must not contain spaces or control characters (a "
		    "trailing newline?)";
		return -1;
	}
	if ((copy = strdup(url)) == NULL) {
		*why = "out of memory";
		return -1;
	}
	amqp_default_connection_info(&ci);
	if (amqp_parse_url(copy, &ci) != AMQP_STATUS_OK) {
		explicit_bzero(copy, strlen(copy));
		free(copy);
		*why = url_problem(url);
		return -1;
	}
	if (ci.host == NULL || *ci.host == '\0' || ci.port <= 0 ||
	    ci.port > 65535) {
		explicit_bzero(copy, strlen(copy));
		free(copy);
		*why = ci.port <= 0 || ci.port > 65535 ? "the port must be a "
		    "number 1..65535" : "missing host";
		return -1;
	}
	b->host = strdup(ci.host);
	b->port = ci.port;
	b->vhost = strdup(ci.vhost && *ci.vhost ? ci.vhost : "/");
	b->user = strdup(ci.user ? ci.user : "guest");
	b->password = strdup(ci.password ? ci.password : "guest");
	b->tls = ci.ssl != 0;
	explicit_bzero(copy, strlen(copy));
	free(copy);
	return 0;
}

char *
dlq_url_mask(const char *url)
{
	const char *scheme_end, *at, *colon, *auth_end;
	struct dlq_buf b;

	dlq_buf_init(&b);
	scheme_end = strstr(url, "://");
	if (scheme_end == NULL) {
		dlq_buf_adds(&b, "***");
		return b.data;
	}
	scheme_end += 3;
	auth_end = scheme_end + strcspn(scheme_end, "/?#");
	at = NULL;
	for (const char *p = scheme_end; p < auth_end; p++)
		if (*p == '@')
			at = p;
	/* a '/', '?' or '#' not percent-encoded in a password ends the host
	 * part early (rabbitmq-c refuses such a URL: none is in a vhost): an
	 * '@' after it still ends the password */
	if (at == NULL)
		at = strrchr(auth_end, '@');
	if (at == NULL) {
		dlq_buf_adds(&b, url);
		return b.data;
	}
	colon = memchr(scheme_end, ':', (size_t)(at - scheme_end));
	if (colon == NULL) {
		dlq_buf_adds(&b, url);
		return b.data;
	}
	dlq_buf_add(&b, url, (size_t)(colon - url) + 1);
	dlq_buf_adds(&b, "***");
	dlq_buf_adds(&b, at);
	return b.data;
}

const char *
dlq_url_host(const char *url, char *out, size_t n)
{
	const char *p = strstr(url, "://"), *end, *at;
	size_t len;

	p = p ? p + 3 : url;
	end = p + strcspn(p, "/?#");
	for (at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	len = strcspn(p, ":/?#");
	if (*p == '[')			/* IPv6 literal */
		len = strcspn(p, "]") + 1;
	if (len > (size_t)(end - p))
		len = (size_t)(end - p);
	snprintf(out, n, "%.*s", (int)len, p);
	return out;
}

bool
dlq_url_has_userinfo(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	return memchr(p, '@', strcspn(p, "/?#")) != NULL;
}

/* Whether `host` is `domain` or one of its subdomains. */
static bool
host_in(const char *host, const char *domain)
{
	size_t n = strlen(host), d = strlen(domain);

	return strcasecmp(host, domain) == 0 || (n > d + 1 &&
	    host[n - d - 1] == '.' && strcasecmp(host + n - d, domain) == 0);
}

/* Discord's webhook URL with /slack at its end takes Slack's text. */
static bool
slack_compatible_path(const char *url)
{
	size_t n = strcspn(url, "?#");

	return n >= 6 && strncmp(url + n - 6, "/slack", 6) == 0;
}

/* Whether the path of `url` (before its query) holds `part`. */
static bool
path_has(const char *url, const char *part)
{
	const char *p = strstr(url, "://");
	size_t n;

	p = p != NULL ? p + 3 : url;
	p += strcspn(p, "/?#");
	n = strcspn(p, "?#");
	return memmem(p, n, part, strlen(part)) != NULL;
}

enum dlq_alert_format
dlq_alert_format_detect(const char *url)
{
	char host[256];

	dlq_url_host(url, host, sizeof(host));
	if (host_in(host, "slack.com"))
		return DLQ_FORMAT_SLACK;
	if (strcasecmp(host, "chat.googleapis.com") == 0)
		return DLQ_FORMAT_GOOGLE_CHAT;
	if (host_in(host, "discord.com") || host_in(host, "discordapp.com"))
		return slack_compatible_path(url) ? DLQ_FORMAT_SLACK :
		    DLQ_FORMAT_DISCORD;
	/* Microsoft Teams' workflows (Power Automate, Logic Apps), by host
	 * or by the paths of their triggers in any cloud; the connectors
	 * they replaced took {"text"}: plain */
	if (host_in(host, "logic.azure.com") ||
	    host_in(host, "powerplatform.com") ||
	    host_in(host, "powerautomate.com") ||
	    host_in(host, "flow.microsoft.com") ||
	    path_has(url, "/powerautomate/") ||
	    path_has(url, "/triggers/manual/paths/invoke"))
		return DLQ_FORMAT_AUTO;
	return DLQ_FORMAT_PLAIN;
}
