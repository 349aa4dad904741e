/* httpmsg.c - a console response's headers (httpmsg.h). */
#include "httpmsg.h"

#include <stdio.h>

void
dlq_console_header(struct dlq_console_res *res, const char *name,
    const char *value)
{
	if (res->nheaders == DLQ_CONSOLE_HEADERS_MAX)
		return;
	snprintf(res->headers[res->nheaders].name,
	    sizeof(res->headers[0].name), "%s", name);
	snprintf(res->headers[res->nheaders].value,
	    sizeof(res->headers[0].value), "%s", value);
	res->nheaders++;
}
