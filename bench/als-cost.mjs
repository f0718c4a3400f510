// What an AsyncLocalStorage scope per job costs on Node 20 (it turns on promise hooks): a job of
// two awaits, 10 at a time, with and without als.run. Usage: node bench/als-cost.mjs plain|als
import { AsyncLocalStorage } from "node:async_hooks";
const als = new AsyncLocalStorage();
async function job(i){ await null; await Promise.resolve(i); return i; }
async function run(n, useAls){
  const t=process.cpuUsage();
  for(let i=0;i<n;i+=10){ await Promise.all(Array.from({length:10},(_, k)=> useAls? als.run(i+k, ()=>job(i+k)) : job(i+k))); }
  const u=process.cpuUsage(t); return (u.user+u.system)/n;
}
const mode = process.argv[2];
await run(100000, mode==="als");
console.log(mode, (await run(200000, mode==="als")).toFixed(3), "µs/job");
