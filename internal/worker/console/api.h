/* api.h - the console's JSON API under /api/v1/ (docs/openapi.json):
 * each resource a request of the control protocol, run through
 * dlq_requests_handle() as the signed-in user. */
#ifndef DLQ_CONSOLE_API_H
#define DLQ_CONSOLE_API_H

#include "config.h"
#include "httpmsg.h"
#include "users.h"

struct dlq_archive;
struct dlq_api;

struct dlq_api *dlq_api_new(const struct dlq_config *, struct dlq_archive *);
void	dlq_api_free(struct dlq_api *);
void	dlq_api_handle(struct dlq_api *, const struct dlq_console_user *,
	    const struct dlq_console_req *, struct dlq_console_res *);

#endif
