/* assets.h - the console's files, built into the binary from
 * internal/worker/console/web/ (scripts/embed-assets.sh): the page works
 * with no file on disk and no other origin. */
#ifndef DLQ_CONSOLE_ASSETS_H
#define DLQ_CONSOLE_ASSETS_H

#include <stddef.h>

struct dlq_asset {
	const char		*name;	/* "console.js" */
	const unsigned char	*data;
	size_t			 len;
};

extern const struct dlq_asset dlq_console_assets[];	/* NULL-ended */

/* The asset named `name`, NULL when none. */
const struct dlq_asset *dlq_asset_find(const char *name);
/* Its Content-Type, by its extension. */
const char *dlq_asset_type(const char *name);

#endif
