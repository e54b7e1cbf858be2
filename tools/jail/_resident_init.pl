# The init of a session's resident jail: it runs that session's foreground commands, one at a time.
#
# The daemon does not run this file: tools/jail/resident.py passes its text to
# ``perl -e <text> -- <machine> <control fd> <idle seconds>``, run inside the jail as the PID namespace's init
# (``bwrap --as-pid-1``). Perl because it starts in 1.4 ms of CPU where ``python -S -I`` takes 6.4 (the
# interpreter is Essential on Debian and Ubuntu: it is in every jail's /usr). It loads no module (``Socket``
# costs 6 ms, ``POSIX`` 9): what core Perl lacks (recvmsg with descriptors, prctl, prlimit, the scheduler
# calls, signalfd) it makes through ``syscall``, whose numbers it knows for x86_64 and aarch64; elsewhere the
# daemon starts no resident and every command gets a jail of its own.
#
# Why it can stay a wall while a command runs beside it:
#
# - it is the namespace's init and handles no signal, so no process of the namespace can signal it
#   (``kill -9 1`` does nothing), and ``kill(-1, SIGKILL)`` from it reaches every other process of the
#   namespace, ``setsid`` grandchildren included, and nothing outside it;
# - it makes itself non-dumpable at once, so a command of the same uid cannot open ``/proc/1/mem`` or its
#   control socket through ``/proc/1/fd`` (the system-call filter already refuses ``ptrace``);
# - every descriptor of its own is close-on-exec, so a command gets only its output, ``/dev/null`` and its
#   state pipe; SIGCHLD, which it blocks to read through a signalfd, is unblocked in the command;
# - what a command inherits from it that a process of the same uid may change from outside (resource limits,
#   nice value, CPU affinity, scheduling policy, I/O priority, ``oom_score_adj``) is put back after each
#   command, or it ends;
# - it sweeps only namespaces of its own: pid 1 of a PID namespace is not enough (``unshare --pid`` alone makes
#   one that shares the host's mounts and IPC, and its sweep once emptied the host's /dev/shm and System V IPC
#   under a running PostgreSQL). So the daemon's first request names the daemon's own namespaces that the
#   jail unshares, and before anything else this process checks that none is its own, or refuses to run; and
#   nothing here kills every process, empties /dev/shm or removes IPC objects unless that check passed.
#
# The protocol on the SOCK_SEQPACKET control socket. The daemon sends fields separated by NUL bytes:
#
# - first, once: ``namespaces <kind>:[<inode>]...``, the daemon's namespaces as ``readlink /proc/self/ns/<kind>``
#   shows them (pid, mnt and ipc at least). Where one is its own too (or it cannot tell), this process
#   answers ``refused <why>`` (the daemon reads it as the answer to its first command), says why on stderr
#   and exits with 2, having done nothing; it says nothing when it may go on;
# - then, one at a time: ``run <fd> <cwd> <argc> <argv...> <NAME=value...>`` with two descriptors attached
#   (the output pipe's write end, then the state pipe's, which the command gets at number ``fd``), or
#   ``signal <signum>``: that signal to every process of the namespace but this one. This process answers in
#   ASCII:
#
# - ``started``, or ``error <errno> cwd|program`` (the command did not start: its directory or its program);
# - ``exit <returncode> <left> <retire>`` once the command exited and the namespace has been swept (every
#   other process killed and reaped), /dev/shm emptied and System V IPC objects removed; ``left`` is 1 when
#   anything else still ran, ``retire`` 1 when this process ends now (the command changed what the next would
#   inherit, beyond repair: see inherited() and restore());
# - ``idle`` just before it exits, after ``idle seconds`` without a command.
#
# It exits when the daemon's end of the socket closes, and with it the whole namespace.

my %CALLS = (
    x86_64 => {prctl => 157, recvmsg => 47, sendto => 44, recvfrom => 45, setsid => 112, sigprocmask => 14,
        signalfd4 => 289, dup3 => 292, exit_group => 231, prlimit64 => 302, getaffinity => 204,
        setaffinity => 203, getscheduler => 145, getparam => 143, setscheduler => 144, ioprio_get => 252,
        ioprio_set => 251, kill => 62, close => 3, fcntl => 72, read => 0, write => 1, pipe2 => 293, openat => 257,
        execve => 59, shmctl => 31, semctl => 66, msgctl => 71},
    aarch64 => {prctl => 167, recvmsg => 212, sendto => 206, recvfrom => 207, setsid => 157, sigprocmask => 135,
        signalfd4 => 74, dup3 => 24, exit_group => 94, prlimit64 => 261, getaffinity => 123,
        setaffinity => 122, getscheduler => 120, getparam => 121, setscheduler => 119, ioprio_get => 31,
        ioprio_set => 30, kill => 129, close => 57, fcntl => 25, read => 63, write => 64, pipe2 => 59, openat => 56,
        execve => 221, shmctl => 195, semctl => 191, msgctl => 187},
);
my ($machine, $passed, $idle) = @ARGV;
my $SYS = $CALLS{$machine // ''};
if ($$ != 1 || !$SYS) {  # its sweep kills every process it can see
    syswrite(STDERR, "the resident shell's init runs only as pid 1 of a jail, on x86_64 or aarch64\n");
    exit 2;
}
my ($O_CLOEXEC, $F_DUPFD_CLOEXEC, $MSG_NOSIGNAL, $MSG_CMSG_CLOEXEC) = (0x80000, 1030, 0x4000, 0x40000000);

# Why this process may not sweep its namespace (its first request, from the daemon, named a namespace that is
# its own too, or is not that request); undef when it may.
sub foreign {
    my ($kind, @theirs) = split(/\0/, $_[0], -1);
    return 'its first request named no namespaces' if $kind ne 'namespaces';
    my %named;
    for my $theirs (@theirs) {
        my ($name) = $theirs =~ /\A(pid|mnt|ipc|net|uts|user|cgroup):\[[0-9]+\]\z/ or return 'a garbled namespace';
        my $ours = readlink("/proc/self/ns/$name") // return "it cannot see its own $name namespace";
        return "it shares the daemon's $name namespace" if $ours eq $theirs;
        $named{$name} = 1;
    }
    return $named{pid} && $named{mnt} && $named{ipc} ? undef : 'its pid, mnt and ipc namespaces were not all named';
}

# Whether the check passed: what signals every process of the namespace (sweep(), a ``signal`` request),
# empty_shm() and remove_sysv_ipc() end this process without it.
my $checked = 0;
{
    my $first = "\0" x 4096;
    my $size = call('recvfrom', $passed + 0, $first, 4096, 0, 0, 0);
    exit 2 if $size == 0;  # the daemon is gone
    my $refusal = $size < 0 ? 'no control socket' : foreign(substr($first, 0, $size));
    if (defined($refusal)) {
        my $answer = "refused $refusal";
        call('sendto', $passed + 0, $answer, length($answer), $MSG_NOSIGNAL, 0, 0);
        syswrite(STDERR, "the resident shell's init does not run: $refusal\n");
        exit 2;
    }
    $checked = 1;
}
sub confined { exit 3 unless $checked }
my ($SIGKILL, $SIGCHLD_MASK, $NOTHING_BLOCKED, $IOPRIO_WHO_PROCESS) = (9, pack('Q', 1 << 16), pack('Q', 0), 1);
# The size of the buffer for a request's descriptors; a variable: a string the kernel writes into through a
# pointer must be built at run time, never share a constant's buffer.
my $ANCILLARY = 64;
my $SHM = '/dev/shm';

sub call { my $name = shift; syscall($SYS->{$name}, @_) }
sub address { unpack('J', pack('p', $_[0])) }  # where the kernel writes into a string made long enough

call('prctl', 4, 0, 0, 0, 0) == 0 or die "prctl(PR_SET_DUMPABLE, 0) failed: $!\n";
$SIG{FPE} = 'DEFAULT';  # Perl ignores it, and an ignored signal would stay ignored in every command
sysopen(my $null, '/dev/null', 2) or die "/dev/null: $!\n";
call('dup3', fileno($null), $_, $O_CLOEXEC) for 0 .. 2;
close($null);
# Our descriptors all sit low (the daemon's number could be any): a command's state pipe goes at 64 or above
# (see tools.jail.resident), so it never lands on one of ours.
my $control = call('fcntl', $passed + 0, $F_DUPFD_CLOEXEC, 3);
die "control socket: $!\n" if $control < 0;
call('close', $passed + 0);
call('sigprocmask', 0, $SIGCHLD_MASK, 0, 8) == 0 or die "sigprocmask: $!\n";  # SIG_BLOCK
my $children = call('signalfd4', -1, $SIGCHLD_MASK, 8, 0x800 | $O_CLOEXEC);  # SFD_NONBLOCK
die "signalfd: $!\n" if $children < 0;

sub answer { my $text = shift; call('sendto', $control, $text, length($text), $MSG_NOSIGNAL, 0, 0) }

# A small file's text, undef when it cannot be read (system calls: Perl's open costs twice as many).
sub slurp {
    my $path = shift;  # a copy: syscall may write into a string, and refuses a constant
    my $fd = call('openat', -100, $path, $O_CLOEXEC);  # AT_FDCWD, O_RDONLY
    return undef if $fd < 0;
    my ($text, $size) = ('', 0);
    while (1) {
        my $chunk = "\0" x 4096;
        $size = call('read', $fd, $chunk, 4096);
        last if $size <= 0;
        $text .= substr($chunk, 0, $size);
    }
    call('close', $fd);
    return $size < 0 ? undef : $text;
}

# Resource limits, nice value, CPU affinity, scheduling policy and priority, I/O priority, oom_score_adj: what
# a command inherits from this process that a process of the same uid may change from outside (prlimit,
# renice, taskset, chrt, ionice on pid 1, its oom_score_adj).
sub limits { map { my $limit = "\0" x 16; call('prlimit64', 0, $_, 0, $limit) == 0 ? $limit : '' } 0 .. 15 }

sub cpus { my $set = "\0" x 128; my $size = call('getaffinity', 0, 128, $set); $size > 0 ? substr($set, 0, $size) : '' }

sub schedule { my $param = "\0" x 4; call('getparam', 0, $param); (call('getscheduler', 0), unpack('i', $param)) }

sub inherited {
    join("\n", map({ unpack('H*', $_) } limits()), getpriority(0, 0), unpack('H*', cpus()), schedule(),
        call('ioprio_get', $IOPRIO_WHO_PROCESS, 0), slurp('/proc/self/oom_score_adj') // '');
}

# Put back what a command changed; false where that cannot be done (a lowered hard limit, a raised nice
# value or oom_score_adj, a real-time I/O class: only privilege undoes them).
sub restore {
    my ($wanted, $limits, $nice, $cpus, $policy, $priority, $ioprio) = @_;
    return 1 if inherited() eq $wanted;
    my ($now_policy, $now_priority) = schedule();
    if ($now_policy != $policy || $now_priority != $priority) {
        call('setscheduler', 0, $policy + 0, pack('i', $priority)) == 0 or return 0;
    }
    if (call('ioprio_get', $IOPRIO_WHO_PROCESS, 0) != $ioprio) {
        call('ioprio_set', $IOPRIO_WHO_PROCESS, 0, $ioprio + 0) == 0 or return 0;
    }
    my @now = limits();
    for my $limit (0 .. $#now) {
        next if $now[$limit] eq $limits->[$limit];
        my $value = $limits->[$limit];
        call('prlimit64', 0, $limit, $value, 0) == 0 or return 0;
    }
    if (getpriority(0, 0) != $nice) { setpriority(0, 0, $nice) or return 0 }
    if (cpus() ne $cpus) { call('setaffinity', 0, length($cpus), $cpus) == 0 or return 0 }
    return inherited() eq $wanted;
}

my $wanted = inherited();
my @restore = ($wanted, [limits()], getpriority(0, 0), cpus(), schedule(), call('ioprio_get', $IOPRIO_WHO_PROCESS, 0));

sub anything_running { call('kill', -1, 0) == 0 || $! == 1 }  # EPERM: something we may not signal

# Kill and reap every process of the namespace but this one.
sub sweep {
    confined();
    while (anything_running()) {
        call('kill', -1, $SIGKILL);
        1 while waitpid(-1, 0) > 0;
    }
}

# Remove a path and all under it, opening up read-only directories; symbolic links are not followed (Perl's
# unlink looks with lstat and refuses a directory: EISDIR).
sub remove {
    my $path = shift;
    return if unlink($path) || $! != 21;
    chmod(0700, $path);
    opendir(my $dir, $path) or return;
    my @names = grep { $_ ne '.' && $_ ne '..' } readdir($dir);
    closedir($dir);
    remove("$path/$_") for @names;
    rmdir($path);
}

sub shm_names {
    opendir(my $dir, $SHM) or return undef;
    my @names = grep { $_ ne '.' && $_ ne '..' } readdir($dir);
    closedir($dir);
    return \@names;
}

# Remove what the command left in /dev/shm; false when something stays.
sub empty_shm {
    confined();
    my $names = shm_names() or return 0;
    return 1 unless @$names;
    remove("$SHM/$_") for @$names;
    $names = shm_names() or return 0;
    return !@$names;
}

# System V IPC objects by kind: the call that counts and removes them, its command that counts them
# (SHM_INFO, SEM_INFO, MSG_INFO; semctl takes a semaphore number first), and which int of the answer is
# the count.
my @SYSV_IPC = (['shm', 'shmctl', [14], 0], ['sem', 'semctl', [0, 19], 7], ['msg', 'msgctl', [12], 0]);

# Remove the System V shared memory, semaphores and message queues a command left (IPC_RMID is 0), as its own
# jail's end did; false when one stays.
sub remove_sysv_ipc {
    confined();
    my $kept = 0;
    for my $kind (@SYSV_IPC) {
        my ($name, $function, $info, $field) = @$kind;
        my $answer = "\0" x 64;
        next if call($function, 0, @$info, $answer) < 0;  # no System V IPC in this kernel
        next unless (unpack('i*', $answer))[$field];
        my (undef, @lines) = split(/\n/, slurp("/proc/sysvipc/$name") // '');
        for my $line (@lines) {
            my (undef, $id) = split(' ', $line);
            next unless defined($id);
            $kept = 1 if call($function, $id + 0, ($name eq 'sem' ? (0) : ()), 0, 0) < 0;
        }
    }
    return !$kept;
}

# Where a program is, looked up in the command's own PATH.
sub program {
    my ($name, $environment) = @_;
    my ($path) = map { /^PATH=(.*)/s ? $1 : () } @$environment;
    return $name if index($name, '/') >= 0;
    my @directories = split(/:/, $path // '/bin:/usr/bin', -1);
    for my $directory (@directories ? @directories : ('')) {  # an empty PATH is the working directory
        my $candidate = ($directory eq '' ? '.' : $directory) . "/$name";
        return $candidate if -x $candidate && !-d _;
    }
    return undef;
}

my $child;

# Start a command; its output, /dev/null and its state pipe are all it holds of ours.
sub run {
    my ($target, $cwd, $argc, @rest) = @_;
    my ($output, $state) = @{pop(@rest)};
    my @argv = splice(@rest, 0, $argc);
    return answer('error 16 program') if defined($child) || !defined($state) || !@argv;  # EBUSY: one at a time
    chdir($cwd) or return answer('error ' . ($! + 0) . ' cwd');  # the command inherits it
    my $program = program($argv[0], \@rest) // return answer('error 2 program');
    # execve's arrays, made here: the child only makes system calls (the fewer pages it writes, the less its
    # fork costs), pointing into these strings, which its copy of this process holds at the same addresses.
    my ($arguments, $environment) = (pack('p*', @argv) . pack('J', 0), pack('p*', @rest) . pack('J', 0));
    my $pipe = "\0" x 8;
    call('pipe2', $pipe, $O_CLOEXEC) == 0 or return answer('error ' . ($! + 0) . ' program');
    my ($failed, $failure) = unpack('ii', $pipe);
    $target += 0;
    my $pid = fork();
    if (defined($pid) && $pid == 0) {
        # No sub calls here: each page the child writes before execve is a copy.
        my $null = "/dev/null";
        syscall($SYS->{sigprocmask}, 2, $NOTHING_BLOCKED, 0, 8);  # SIG_SETMASK
        syscall($SYS->{setsid});
        my $input = syscall($SYS->{openat}, -100, $null, $O_CLOEXEC);  # its own, read-only, as in a jail
        syscall($SYS->{dup3}, $input, 0, 0);
        syscall($SYS->{dup3}, $output, 1, 0);
        syscall($SYS->{dup3}, $output, 2, 0);
        syscall($SYS->{dup3}, $state, $target, 0);
        syscall($SYS->{execve}, $program, $arguments, $environment);
        syscall($SYS->{write}, $failure, pack('i', $! + 0), 4);
        syscall($SYS->{exit_group}, 127);
    }
    my $error = $! + 0;
    call('close', $failure);
    my $errno = "\0" x 4;
    my $size = defined($pid) ? call('read', $failed, $errno, 4) : 0;
    call('close', $failed);
    return answer("error $error program") unless defined($pid);
    if ($size == 4) {
        waitpid($pid, 0);
        return answer('error ' . unpack('i', $errno) . ' program');
    }
    $child = $pid;
    answer('started');
}

# Reap what exited; when it was the command, sweep the namespace and send its exit. True when this process
# must then end: the command changed what the next would inherit from it, beyond repair.
sub reap {
    my $drained = "\0" x 1024;
    1 while call('read', $children, $drained, 1024) > 0;
    my $status;
    while ((my $pid = waitpid(-1, 1)) > 0) {  # WNOHANG
        $status = $? if defined($child) && $pid == $child;
    }
    return 0 unless defined($status);
    my $left = anything_running() ? 1 : 0;
    sweep();
    undef $child;
    my $retire = (!empty_shm() || !remove_sysv_ipc() || !restore(@restore)) ? 1 : 0;
    my $code = ($status & 127) ? -($status & 127) : $status >> 8;
    answer("exit $code $left $retire");
    return $retire;
}

# One request; false when the daemon is gone.
sub request {
    my $peek = "\0";
    my $size = call('recvfrom', $control, $peek, 1, 0x22, 0, 0);  # MSG_PEEK | MSG_TRUNC: the whole size
    return 0 if $size <= 0;
    my ($data, $ancillary) = ("\0" x $size, "\0" x $ANCILLARY);
    my $vector = pack('QQ', address($data), $size);
    my $header = pack('QQQQQQQ', 0, 0, address($vector), 1, address($ancillary), $ANCILLARY, 0);
    my $got = call('recvmsg', $control, $header, $MSG_CMSG_CLOEXEC);
    return 0 if $got <= 0;
    my (@fds, $offset);
    my $space = unpack('Q', substr($header, 40, 8));
    for ($offset = 0; $offset + 16 <= $space; ) {
        my ($length, $level, $kind) = unpack('Qii', substr($ancillary, $offset, 16));
        last if $length < 16;
        push(@fds, unpack('i*', substr($ancillary, $offset + 16, $length - 16))) if $level == 1 && $kind == 1;
        $offset += ($length + 7) & ~7;
    }
    my @fields = split(/\0/, substr($data, 0, $got), -1);
    my $kind = shift(@fields);
    if ($kind eq 'signal' && defined($child)) {
        confined();
        call('kill', -1, $fields[0] + 0);
    } elsif ($kind eq 'run') {
        run(@fields, [@fds == 2 ? @fds : ()]);
    }
    call('close', $_) for @fds;
    return 1;
}

while (1) {
    my $wanted_in = '';
    vec($wanted_in, $_, 1) = 1 for $control, $children;
    my $ready = select(my $got_in = $wanted_in, undef, undef, defined($child) ? undef : $idle + 0);
    if ($ready == 0) {
        answer('idle');
        exit 0;
    }
    next if $ready < 0 && $! == 4;  # EINTR
    exit 0 if $ready < 0;
    if (vec($got_in, $children, 1)) { exit 0 if reap() }
    if (vec($got_in, $control, 1)) { exit 0 unless request() }
}
