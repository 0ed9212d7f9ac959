# nodewarden %postun ($1 = 0 on erase, 1 on upgrade): reload systemd so it forgets the unit.
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
# On erase, the kubectl plugin's symlink %post made (only if it is still ours).
if [ "$1" -eq 0 ] && [ "$(readlink /usr/bin/kubectl-nodewarden 2>/dev/null)" = nodewarden ]; then
    rm -f /usr/bin/kubectl-nodewarden
fi
exit 0
