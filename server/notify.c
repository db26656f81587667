/*
 * notify.c - sd_notify for systemd's Type=notify (notify.h). libsystemd is
 * linked into unreadd only (the Makefile defines UNREADD_SYSTEMD when its
 * development files are present).
 */
#include "notify.h"

#ifdef UNREADD_SYSTEMD
#include <systemd/sd-daemon.h>

void notify_ready(const char *status)
{
    (void)sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_stopping(void)
{
    (void)sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
}
#else
void notify_ready(const char *status)
{
    (void)status;
}

void notify_stopping(void)
{
}
#endif
