/**
 * errand in NestJS (on Express): the dashboard and its JSON API under /admin/jobs and the tick at
 * /api/cron/tick, each a controller. Nest's body parser has read every JSON and form body before
 * a controller runs; toNodeHandler takes the body it left on `req.body`.
 *
 * Nest's decorators are TypeScript's legacy ones, so this folder has its own tsconfig.json
 * (experimentalDecorators). Dependencies are injected by token with @Inject: tsx (esbuild) does
 * not emit the design-time type metadata Nest would otherwise read.
 *
 *   ERRAND_DASHBOARD_TOKEN=$(openssl rand -hex 32) CRON_SECRET=$(openssl rand -hex 32) \
 *     TSX_TSCONFIG_PATH=examples/frameworks/nestjs/tsconfig.json \
 *     node --import tsx examples/frameworks/nestjs/main.ts
 */
import "reflect-metadata";
import { All, Controller, Inject, Module, type OnApplicationShutdown, Req, Res } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { createFetchHandler, createTickHandler, type Errand, openErrand, toNodeHandler } from "errand";
import type { Request, Response } from "express";
import { jobs, port } from "../jobs.js";

const ERRAND = "ERRAND";

@Controller("admin/jobs")
class DashboardController {
  private readonly serve: ReturnType<typeof toNodeHandler>;

  constructor(@Inject(ERRAND) errand: Errand) {
    this.serve = toNodeHandler(createFetchHandler(errand, { prefix: "/admin/jobs" }));
  }

  // /admin/jobs itself ("") and every path below it ("*path").
  @All(["", "*path"])
  handle(@Req() req: Request, @Res() res: Response) {
    return this.serve(req, res);
  }
}

@Controller("api/cron/tick")
class TickController {
  private readonly serve: ReturnType<typeof toNodeHandler>;

  constructor(@Inject(ERRAND) errand: Errand) {
    this.serve = toNodeHandler(createTickHandler(errand));
  }

  @All()
  handle(@Req() req: Request, @Res() res: Response) {
    return this.serve(req, res);
  }
}

/** Closes errand when Nest shuts down (app.close(), or a signal with enableShutdownHooks). */
class ErrandCloser implements OnApplicationShutdown {
  constructor(@Inject(ERRAND) private readonly errand: Errand) {}

  onApplicationShutdown() {
    return this.errand.close();
  }
}

@Module({
  controllers: [DashboardController, TickController],
  providers: [
    { provide: ERRAND, useFactory: () => openErrand({ url: process.env.ERRAND_URL, jobs }) },
    ErrandCloser,
  ],
})
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: ["warn", "error"] });
app.enableShutdownHooks();
await app.listen(port, "127.0.0.1");
console.log(`listening on ${(await app.getUrl()).replace("[::1]", "127.0.0.1")}`);
