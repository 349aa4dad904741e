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

void
dlq_console_error(struct dlq_console_res *res, unsigned status,
    const char *code, const char *msg)
{
	res->status = status;
	res->type = "application/json";
	dlq_buf_reset(res->body);
	dlq_buf_adds(res->body, "{\"ok\":false,\"code\":");
	dlq_buf_json_cstr(res->body, code);
	dlq_buf_adds(res->body, ",\"error\":");
	dlq_buf_json_cstr(res->body, msg);
	dlq_buf_adds(res->body, "}\n");
}
