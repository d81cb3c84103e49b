#!/usr/bin/env node
import { VERSION } from './version.js';

process.stdout.write(`rlvr ${VERSION}\n`);
