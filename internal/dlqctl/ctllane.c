/* ctllane.c - one background thread running jobs in order (ctllane.h). */
#include "ctllane.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

struct lane_job {
	void		(*fn)(void *);
	void		*arg;
	struct lane_job	*next;
};

struct dlq_lane {
	pthread_t	 thread;
	bool		 threaded;	/* else jobs run in dlq_lane_put() */
	bool		 closing;
	pthread_mutex_t	 lock;
	pthread_cond_t	 changed;	/* a job put, a job run, closing */
	struct lane_job	*head, *tail;
	uint64_t	 put, done;	/* tickets: jobs put, jobs run */
};

static void *
run(void *arg)
{
	struct dlq_lane *l = arg;
	struct lane_job *j;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (l->head == NULL && !l->closing)
			pthread_cond_wait(&l->changed, &l->lock);
		if ((j = l->head) == NULL)
			break;	/* closing, and nothing left */
		pthread_mutex_unlock(&l->lock);
		j->fn(j->arg);
		pthread_mutex_lock(&l->lock);
		if ((l->head = j->next) == NULL)
			l->tail = NULL;
		l->done++;
		free(j);
		pthread_cond_broadcast(&l->changed);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

struct dlq_lane *
dlq_lane_open(void)
{
	struct dlq_lane *l = calloc(1, sizeof(*l));
	sigset_t stops, was;

	if (l == NULL)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->changed, NULL);
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGHUP);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stops, &was);
	l->threaded = pthread_create(&l->thread, NULL, run, l) == 0;
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return l;
}

uint64_t
dlq_lane_put(struct dlq_lane *l, void (*fn)(void *), void *arg)
{
	struct lane_job *j = l->threaded ? malloc(sizeof(*j)) : NULL;
	uint64_t ticket;

	pthread_mutex_lock(&l->lock);
	ticket = ++l->put;
	if (j == NULL) {
		/* no thread, or no memory for the job: run it here, after
		 * those before it */
		while (l->done + 1 < ticket)
			pthread_cond_wait(&l->changed, &l->lock);
		pthread_mutex_unlock(&l->lock);
		fn(arg);
		pthread_mutex_lock(&l->lock);
		l->done++;
		pthread_cond_broadcast(&l->changed);
		pthread_mutex_unlock(&l->lock);
		return ticket;
	}
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	if (l->tail != NULL)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->lock);
	return ticket;
}

void
dlq_lane_wait(struct dlq_lane *l, uint64_t ticket)
{
	pthread_mutex_lock(&l->lock);
	while (l->done < ticket)
		pthread_cond_wait(&l->changed, &l->lock);
	pthread_mutex_unlock(&l->lock);
}

void
dlq_lane_drain(struct dlq_lane *l)
{
	pthread_mutex_lock(&l->lock);
	while (l->done < l->put)
		pthread_cond_wait(&l->changed, &l->lock);
	pthread_mutex_unlock(&l->lock);
}

void
dlq_lane_close(struct dlq_lane *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->lock);
	l->closing = true;
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->lock);
	if (l->threaded)
		pthread_join(l->thread, NULL);
	pthread_cond_destroy(&l->changed);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
