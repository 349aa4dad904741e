/* alertformat.c - webhook text formats by name. */
#include <string.h>

#include "alertformat.h"

static const char *const format_names[] = { "auto", "slack", "google_chat",
	"plain", "discord" };

const char *
dlq_alert_format_name(enum dlq_alert_format f)
{
	return format_names[f];
}

int
dlq_alert_format_parse(const char *s, enum dlq_alert_format *out)
{
	size_t i;

	for (i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (strcmp(s, format_names[i]) == 0) {
			*out = (enum dlq_alert_format)i;
			return 0;
		}
	return -1;
}
