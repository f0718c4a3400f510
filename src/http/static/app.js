// errand dashboard: a small single-page app over the JSON API. No framework, no build step.
// Each ES module holds one idea (dom.js, api.js, shell.js, one per view); this one starts them.
//
// Safety rule for every module: every value from the server reaches the page through
// textContent, createTextNode or setAttribute on a fixed, harmless attribute — never
// innerHTML — so a payload holding markup is shown as text and cannot run.

import { renderDlq } from "./dlq.js";
import { renderJob } from "./job.js";
import { renderJobs } from "./jobs.js";
import { renderOverview } from "./overview.js";
import { renderSchedules } from "./schedules.js";
import { startShell } from "./shell.js";
import { renderWorkers } from "./workers.js";

startShell(
  [
    { path: "", label: "Overview", render: renderOverview },
    { path: "jobs", label: "Jobs", render: renderJobs },
    { path: "dlq", label: "Dead letters", render: renderDlq },
    { path: "schedules", label: "Schedules", render: renderSchedules },
    { path: "workers", label: "Workers", render: renderWorkers },
  ],
  renderJob,
);
