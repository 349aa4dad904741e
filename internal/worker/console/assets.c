/* assets.c - finding the console's built-in files (assets.h). */
#include "assets.h"

#include <string.h>

const struct dlq_asset *
dlq_asset_find(const char *name)
{
	const struct dlq_asset *a;

	for (a = dlq_console_assets; a->name != NULL; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

const char *
dlq_asset_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot == NULL)
		return "application/octet-stream";
	if (strcmp(dot, ".html") == 0)
		return "text/html; charset=utf-8";
	if (strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (strcmp(dot, ".svg") == 0)
		return "image/svg+xml";
	return "application/octet-stream";
}
