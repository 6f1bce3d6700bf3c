"""List scheduling of a job DAG on C cores and M MB of memory, in Snakemake's spirit.

Policy: whenever a job ends (or at the start), the ready jobs (every dependency done) are
considered in Snakemake's order: by decreasing priority (the rule's `priority:`), then by
decreasing longest remaining path (the job's own time plus the longest chain after it); each
one that fits in the free cores and memory starts at once; a job that does not fit waits, jobs
after it in the order may still start (greedy back-filling, as Snakemake's greedy scheduler
does). Snakemake breaks ties of priority by the bytes of the jobs' inputs, which a plan does
not know; the longest path stands in for them. A job asking for more threads than there are
cores runs on all of them, as Snakemake caps threads at --cores; one declaring more memory than
the machine has runs with nothing else in memory (Snakemake would refuse it: the caller says so).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class SimJob:
    name: str
    rule: str
    seconds: float  # wall time when it runs on its threads
    threads: int = 1
    mem_mb: float = 0.0
    after: tuple[str, ...] = ()  # names of the jobs it needs
    priority: int = 0  # the rule's `priority:` (Snakemake starts the ready jobs of the highest first)


@dataclass
class Schedule:
    makespan: float
    start: dict[str, float]
    end: dict[str, float]
    threads: dict[str, int]
    critical_path: list[str] = field(default_factory=list)

    def busy_cores(self, times: list[float]) -> list[int]:
        """Cores in use at each of `times`."""
        return [sum(t for name, t in self.threads.items() if self.start[name] <= when < self.end[name])
                for when in times]

    def utilisation(self, cores: int) -> float:
        """Share of the cores' time spent in jobs over the makespan."""
        used = sum((self.end[n] - self.start[n]) * t for n, t in self.threads.items())
        return used / (cores * self.makespan) if self.makespan else 0.0


def remaining_paths(jobs: dict[str, SimJob]) -> dict[str, float]:
    """Each job's own time plus the longest chain of jobs that need it."""
    users: dict[str, list[str]] = {name: [] for name in jobs}
    for job in jobs.values():
        for need in job.after:
            users[need].append(job.name)
    longest: dict[str, float] = {}
    for name in reversed(topological_order(jobs)):
        longest[name] = jobs[name].seconds + max((longest[u] for u in users[name]), default=0.0)
    return longest


def snakemake_order(jobs: dict[str, SimJob]) -> dict[str, tuple[int, float]]:
    """Each job's rank, the larger first: its priority, then its longest remaining path."""
    paths = remaining_paths(jobs)
    return {name: (job.priority, paths[name]) for name, job in jobs.items()}


def topological_order(jobs: dict[str, SimJob]) -> list[str]:
    waiting = {name: len(job.after) for name, job in jobs.items()}
    users: dict[str, list[str]] = {name: [] for name in jobs}
    for job in jobs.values():
        for need in job.after:
            users[need].append(job.name)
    ready = sorted(name for name, count in waiting.items() if count == 0)
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for user in users[name]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if len(order) != len(jobs):
        raise ValueError("the jobs' dependencies form a cycle")
    return order


def simulate(jobs: list[SimJob], cores: int, mem_mb: float = float("inf"),
             order: Callable[[dict[str, SimJob]], dict] = snakemake_order) -> Schedule:
    """The schedule of `jobs` on `cores` cores and `mem_mb` of memory (policy: module docstring).
    `order`: jobs -> each job's rank, the larger started first, ties by name (remaining_paths:
    the longest path alone, priorities ignored)."""
    by_name = {job.name: job for job in jobs}
    missing = {need for job in jobs for need in job.after} - set(by_name)
    if missing:
        raise ValueError(f"jobs need jobs that are not given: {sorted(missing)[:5]}")
    # A job declaring more than the machine has gets all of it: it runs with nothing beside it.
    by_name = {n: j if j.mem_mb <= mem_mb else replace(j, mem_mb=mem_mb) for n, j in by_name.items()}
    jobs = list(by_name.values())
    rank = order(by_name)
    waiting = {job.name: len(job.after) for job in jobs}
    users: dict[str, list[str]] = {name: [] for name in by_name}
    for job in jobs:
        for need in job.after:
            users[need].append(job.name)
    ready = [name for name, count in waiting.items() if count == 0]
    running: list[tuple[float, str]] = []
    start, end, threads = {}, {}, {}
    now, free_cores, free_mem = 0.0, cores, mem_mb
    while ready or running:
        ready.sort()
        ready.sort(key=rank.__getitem__, reverse=True)  # stable: ties stay by name
        for name in list(ready):
            job = by_name[name]
            wanted = min(job.threads, cores)
            if wanted <= free_cores and job.mem_mb <= free_mem:
                ready.remove(name)
                free_cores -= wanted
                free_mem -= job.mem_mb
                start[name], threads[name] = now, wanted
                heapq.heappush(running, (now + job.seconds, name))
        now, name = heapq.heappop(running)
        finished = [name]
        while running and running[0][0] <= now:  # every job ending at this instant frees its share
            finished.append(heapq.heappop(running)[1])
        for name in finished:
            end[name] = now
            free_cores += threads[name]
            free_mem += by_name[name].mem_mb
            for user in users[name]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.append(user)
    schedule = Schedule(makespan=max(end.values(), default=0.0), start=start, end=end, threads=threads)
    schedule.critical_path = critical_path(by_name, schedule)
    return schedule


def critical_path(jobs: dict[str, SimJob], schedule: Schedule) -> list[str]:
    """The chain that set the makespan, walked back from the last job to end: each job's
    predecessor is the dependency that ended last before it started (when a job waited for
    cores instead, the job whose end freed them)."""
    if not schedule.end:
        return []
    name = max(schedule.end, key=lambda n: (schedule.end[n], n))
    path, seen = [name], {name}
    while schedule.start[name] > 1e-9:
        began = schedule.start[name]
        freed_by = [n for n in schedule.end if n != name and abs(schedule.end[n] - began) < 1e-9]
        # Jobs of no time end when they start: never walk back to one already on the path.
        candidates = [n for n in (*jobs[name].after, *freed_by) if schedule.end[n] <= began + 1e-9 and n not in seen]
        if not candidates:
            break
        name = max(candidates, key=lambda n: (schedule.end[n], n in jobs[path[-1]].after, n))
        path.append(name)
        seen.add(name)
    return path[::-1]
