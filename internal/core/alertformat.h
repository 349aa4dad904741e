/* alertformat.h - the text formats of webhook targets: Slack, Google
 * Chat, Discord, plain; by name (alert.format) and, from a URL's host,
 * dlq_alert_format_detect() in url.h. */
#ifndef DLQ_ALERTFORMAT_H
#define DLQ_ALERTFORMAT_H

enum dlq_alert_format {
	DLQ_FORMAT_AUTO,	/* from the URL's host; resolved at load */
	DLQ_FORMAT_SLACK,
	DLQ_FORMAT_GOOGLE_CHAT,
	DLQ_FORMAT_PLAIN,
	DLQ_FORMAT_DISCORD,	/* {"content": ...}, at most 2 000 characters */
};

/* "auto", "slack", "google_chat", "plain", "discord" */
const char *dlq_alert_format_name(enum dlq_alert_format);
/* 0, or -1 for a name not known */
int	dlq_alert_format_parse(const char *, enum dlq_alert_format *);

#endif
